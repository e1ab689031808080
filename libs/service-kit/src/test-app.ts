import type { DynamicModule, INestApplication, Type } from '@nestjs/common';
import { bootstrapService } from './bootstrap';
import { internalUrlOf } from './internal-port';

export interface RunningApp {
  app: INestApplication;
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** The internal port (/metrics, detailed /readyz), when the app has one. */
  metricsUrl?: string;
  close(): Promise<void>;
}

/** A started app as tests hold it. */
export function runningApp(app: INestApplication): RunningApp {
  const address = app.getHttpServer().address() as { port: number };
  const metricsUrl = internalUrlOf(app);
  return { app, url: `http://127.0.0.1:${address.port}`, ...(metricsUrl === undefined ? {} : { metricsUrl }), close: () => app.close() };
}

/** Boots a Nest module exactly as main.ts does, on a random loopback port (and its internal port on another). */
export async function startTestApp(
  module: Type | DynamicModule,
  configure?: (app: INestApplication) => void | Promise<void>,
): Promise<RunningApp> {
  const app = await bootstrapService(module, { port: 0, host: '127.0.0.1', handleSignals: false, metricsPort: 0, configure });
  return runningApp(app);
}
