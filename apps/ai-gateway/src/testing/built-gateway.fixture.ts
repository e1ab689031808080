import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { RunningApp } from '@flagship/service-kit';
import { type BuiltProcess, createTestEnvironment, FakeModelUpstream, freePort, startBuiltProcess, type TestEnvironment } from '@flagship/testing';
import { type IssueToken, startIssuer, TEST_AUDIENCE, TEST_ISSUER } from './gateway.fixture';

const ROOT = join(__dirname, '..', '..', '..', '..');
const BUILT_MAIN = join(ROOT, 'dist/apps/ai-gateway/apps/ai-gateway/src/main.js');
const BUILT_MANAGEMENT_API = join(ROOT, 'dist/apps/management-api/apps/management-api/src/main.js');

/** Rate limits no load of a test reaches, so that only the ledger says no. */
export const NO_RATE_LIMITS: NodeJS.ProcessEnv = {
  GATEWAY_RATE_LIMIT_RPM: '10000000',
  GATEWAY_RATE_LIMIT_TPM: '1000000000',
  GATEWAY_TENANT_RATE_LIMIT_RPM: 'premium=10000000',
};

/** What an e2e spec runs the built gateway against, and the gateways it started. */
export interface GatewayE2e {
  /** The file's database and Redis prefix. */
  te: TestEnvironment;
  /** The gateways' in-house provider. */
  fake: FakeModelUpstream;
  /** management-api's token issuing (startIssuer), on the same database; its DATA_SOURCE serves the specs' own queries. */
  issuer: RunningApp;
  issue: IssueToken;
  /**
   * The built gateway (its `main.js`, as `npm start` and the image run it) as a process on `te`,
   * trusting the issuer's tokens and calling `fake`; `env` adds to that or overrides it.
   */
  startGateway(env?: NodeJS.ProcessEnv): Promise<BuiltProcess>;
  /**
   * The built management-api as a process on `te` with the dev identity provider, its tokens of the
   * issuer the gateways trust, on `port` (a free one by default). Replicas of one deployment share a
   * public address: give each the first's PUBLIC_BASE_URL in `env`, so that ID tokens the dev IdP
   * issued through one verify at the others (default: its own address). Needs
   * `npx nx run management-api:build`.
   */
  startManagementApi(env?: NodeJS.ProcessEnv, port?: number): Promise<BuiltProcess>;
  /** Kills every gateway and management-api still running, then stops the issuer and the fake and drops the database and Redis keys. */
  close(): Promise<void>;
}

/** `testEnv` goes to createTestEnvironment (another DATABASE_URL, say). Needs `npx nx run ai-gateway:build`. */
export async function setUpGatewayE2e(testEnv: NodeJS.ProcessEnv = {}): Promise<GatewayE2e> {
  if (!existsSync(BUILT_MAIN)) throw new Error(`${BUILT_MAIN} is missing: run \`npx nx run ai-gateway:build\` first`);
  const te = await createTestEnvironment(testEnv);
  const fake = await FakeModelUpstream.start();
  const { app: issuer, issue } = await startIssuer(te, TEST_ISSUER, TEST_AUDIENCE);
  const started: BuiltProcess[] = [];
  return {
    te,
    fake,
    issuer,
    issue,
    async startGateway(env = {}) {
      const gateway = await startBuiltProcess(BUILT_MAIN, {
        ...te.env,
        LOG_LEVEL: 'warn',
        OAUTH_ISSUER: TEST_ISSUER,
        OAUTH_AUDIENCE: TEST_AUDIENCE,
        PROVIDER_INHOUSE_URL: fake.url,
        ...env,
      });
      started.push(gateway);
      return gateway;
    },
    async startManagementApi(env = {}, port) {
      if (!existsSync(BUILT_MANAGEMENT_API)) throw new Error(`${BUILT_MANAGEMENT_API} is missing: run \`npx nx run management-api:build\` first`);
      port ??= await freePort();
      const api = await startBuiltProcess(
        BUILT_MANAGEMENT_API,
        {
          ...te.env,
          NODE_ENV: 'development',
          IDP_MODE: 'dev',
          LOG_LEVEL: 'warn',
          PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
          OAUTH_ISSUER: TEST_ISSUER,
          OAUTH_AUDIENCE: TEST_AUDIENCE,
          RATE_LIMIT_IP_PER_MINUTE: '100000',
          ...env,
        },
        port,
      );
      started.push(api);
      return api;
    },
    async close() {
      for (const g of started) if (g.child.exitCode === null) g.child.kill('SIGKILL');
      // After a Postgres crash the issuer's pool may fail to close; the database goes all the same.
      await issuer.close().catch(() => undefined);
      await fake.close();
      await te.teardown();
    },
  };
}
