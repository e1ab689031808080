/**
 * What each app's /metrics really exports: the four apps started in this process from their own
 * AppModule, config loader and start-up hooks (as main.ts starts them), with Node's default process
 * metrics on as outside tests (NODE_ENV development), on this file's Postgres and Redis; their
 * internal port's /metrics read over HTTP. Alerts and dashboards are checked against these names.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { DynamicModule, INestApplication } from '@nestjs/common';
import { SecretStore } from '@flagship/config';
import { HttpMetrics, type RunningApp, startTestApp } from '@flagship/service-kit';
import { createTestEnvironment, http, type TestEnvironment } from '@flagship/testing';
import { appContract, ROOT } from './app-contracts';

type Configure = (app: INestApplication) => void | Promise<void>;

interface AppStart {
  env: NodeJS.ProcessEnv;
  /** AppModule.forConfig's further arguments. */
  moduleArgs?: (env: NodeJS.ProcessEnv) => unknown[];
  /** main.ts's start-up hook: [file under src, export]. */
  configure?: [string, string];
}

const load = (app: string, file: string) =>
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  require(join(ROOT, 'apps', app, 'src', file)) as Record<string, unknown>;

/** Each app with what it needs to start here (the rest is its env schema's defaults). */
const STARTS: Record<string, AppStart> = {
  'management-api': { env: { IDP_MODE: 'dev', PUBLIC_BASE_URL: 'http://127.0.0.1:3000' }, configure: ['configure', 'configureManagementApi'] },
  'ai-gateway': {
    env: { OAUTH_ISSUER: 'https://api.flagship.test', OAUTH_AUDIENCE: 'flagship-api', PROVIDER_INHOUSE_URL: 'http://127.0.0.1:9/v1' },
    moduleArgs: (env) => [SecretStore.fromEnv(env)],
    configure: ['install-gateway', 'installGateway'],
  },
  'billing-worker': { env: { BILLING_JOBS_ENABLED: 'false' } },
  'orep-server': {
    env: { OREP_AUTH_TOKEN: `t-${randomBytes(8).toString('hex')}`, OREP_TENANT_ID: '6f0c3a52-1b7e-4c1e-9a51-2d9f4c1e0a77', OREP_ENVIRONMENT: 'production' },
    configure: ['fast-path/install-fast-path', 'installFastPath'],
  },
};

export const METRIC_APPS = Object.keys(STARTS);

/** The metric names of a Prometheus text exposition, from its `# TYPE` lines (a histogram's as its _bucket, _sum and _count series). */
export function exposedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    const m = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (!m) continue;
    const [, name, type] = m;
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(`${name}${s}`);
    else if (type === 'summary') for (const s of ['', '_sum', '_count']) names.add(`${name}${s}`);
    else names.add(name!);
  }
  return names;
}

export interface StartedApps {
  /** Each app's /metrics text, read once it started. */
  metrics: Record<string, string>;
  /**
   * The label names of each app's series, from its registry (a series without samples yet shows
   * none in the text): the metric's own, the registry's default `service`, and `le` on a
   * histogram's buckets.
   */
  labels: Record<string, Map<string, Set<string>>>;
  close(): Promise<void>;
}

function labelNames(registry: HttpMetrics['registry']): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const m of registry.getMetricsAsArray() as unknown as Array<{ name: string; type: string; labelNames: string[] }>) {
    const own = ['service', ...m.labelNames];
    if (m.type === 'histogram') {
      out.set(`${m.name}_bucket`, new Set([...own, 'le']));
      for (const s of ['_sum', '_count']) out.set(`${m.name}${s}`, new Set(own));
    } else out.set(m.name, new Set(own));
  }
  return out;
}

/** Starts the four apps (one after the other, on one test database), reads each /metrics. */
export async function startAppsForMetrics(): Promise<StartedApps> {
  const te: TestEnvironment = await createTestEnvironment({ NODE_ENV: 'development' });
  const running: RunningApp[] = [];
  const close = async () => {
    for (const r of running.reverse()) await r.close().catch(() => undefined);
    await te.teardown();
  };
  const metrics: Record<string, string> = {};
  const labels: Record<string, Map<string, Set<string>>> = {};
  try {
    for (const [app, start] of Object.entries(STARTS)) {
      const env = { ...te.env, ...start.env };
      const config = appContract(app).load(env);
      const { AppModule } = load(app, 'app.module') as { AppModule: { forConfig: (...args: unknown[]) => DynamicModule } };
      const configure = start.configure ? (load(app, start.configure[0])[start.configure[1]] as Configure) : undefined;
      const r = await startTestApp(AppModule.forConfig(config, ...(start.moduleArgs?.(env) ?? [])), configure);
      running.push(r);
      const res = await http<string>(`${r.metricsUrl}/metrics`);
      if (res.status !== 200) throw new Error(`${app}: GET /metrics answered ${res.status}`);
      metrics[app] = res.text;
      labels[app] = labelNames(r.app.get(HttpMetrics).registry);
    }
  } catch (err) {
    await close();
    throw err;
  }
  return { metrics, labels, close };
}
