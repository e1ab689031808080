import type { DynamicModule } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { commonEnv } from '@flagship/config';
import type { CleanedEnv } from 'envalid';
import { type BootstrapOptions, bootstrapService } from './bootstrap';

export type CommonConfig = CleanedEnv<typeof commonEnv>;

/** Starts an app from its validated config: what main.ts and the tests both call. */
export function startService(
  config: CommonConfig & { PORT?: number },
  module: DynamicModule,
  options: Omit<BootstrapOptions, 'port' | 'host'> & { port?: number; host?: string } = {},
): Promise<NestExpressApplication> {
  return bootstrapService(module, {
    port: options.port ?? config.PORT ?? 0,
    host: options.host ?? config.HOST,
    shutdownGraceMs: config.SHUTDOWN_GRACE_MS,
    ...options,
  });
}
