import type { DynamicModule, INestApplication, Type } from '@nestjs/common';
import { bootstrapService } from './bootstrap';

export interface RunningApp {
  app: INestApplication;
  /** `http://127.0.0.1:PORT` */
  url: string;
  close(): Promise<void>;
}

/** Boots a Nest module exactly as main.ts does, on a random loopback port. */
export async function startTestApp(
  module: Type | DynamicModule,
  configure?: (app: INestApplication) => void | Promise<void>,
): Promise<RunningApp> {
  const app = await bootstrapService(module, { port: 0, host: '127.0.0.1', handleSignals: false, configure });
  const address = app.getHttpServer().address() as { port: number };
  return { app, url: `http://127.0.0.1:${address.port}`, close: () => app.close() };
}
