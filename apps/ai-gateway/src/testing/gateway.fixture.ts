import { randomBytes, randomUUID } from 'node:crypto';
import { type DynamicModule, Module } from '@nestjs/common';
import { commonEnv, loadConfig, portEnv, SecretStore } from '@flagship/config';
import { AccessTokenIssuer, OAuthModule } from '@flagship/oauth';
import { platformModules } from '@flagship/platform';
import { type RunningApp, startTestApp } from '@flagship/service-kit';
import { createTestEnvironment, FakeModelUpstream, type TestEnvironment } from '@flagship/testing';
import { AppModule, type GatewayOutside } from '../app.module';
import { loadAiGatewayConfig } from '../env.schema';
import { GatewayPipeline } from '../gateway.pipeline';
import { installGateway } from '../install-gateway';

/** The issuer and audience the gateway's tests sign client tokens for (startIssuer) and the gateway trusts. */
export const TEST_ISSUER = 'https://api.flagship.test';
export const TEST_AUDIENCE = 'flagship-api';

/** What fake-chat-1 costs at its catalogue prices: 1,000 micro-credits per 1,000 input tokens, 2,000 per 1,000 output. */
export const fakeChatCost = (input: number, output: number): number => Math.ceil((input * 1000 + output * 2000) / 1000);

/**
 * management-api's token issuing, as libs/oauth does it there: ES256 keys in the shared
 * `signing_keys` table, the same claims. Tests of the gateway issue client tokens through it against
 * the gateway's own database (apps never call each other; they share Postgres).
 */
export async function startIssuer(te: TestEnvironment, issuer: string, audience: string): Promise<{ app: RunningApp; issue: IssueToken }> {
  const config = loadConfig(te.env, { ...commonEnv, ...portEnv(0) });
  @Module({})
  class IssuerModule {}
  const module: DynamicModule = {
    module: IssuerModule,
    imports: [...platformModules(config, { serviceName: 'test-issuer' }), OAuthModule.forRoot({ issuer, audience, issuing: {} })],
  };
  const app = await startTestApp(module);
  const tokens = app.app.get(AccessTokenIssuer);
  const issue: IssueToken = async (tenantId, productKeys = ['core'], clientId = `ffc_${randomBytes(8).toString('hex')}`, scopes = ['ai:invoke']) =>
    (await tokens.issue({ clientId, tenantId, scopes, productKeys })).access_token;
  return { app, issue };
}

/** A client token as /oauth/token answers it; by default with the gateway's `ai:invoke` scope. */
export type IssueToken = (tenantId: string, productKeys?: string[], clientId?: string, scopes?: string[]) => Promise<string>;

/** One gateway, in this process, on the file's database and Redis prefix; `outside` replaces the image hosts' DNS and CA. */
export async function startGateway(te: TestEnvironment, env: NodeJS.ProcessEnv, outside: GatewayOutside = {}): Promise<RunningApp & { pipeline: GatewayPipeline }> {
  const config = loadAiGatewayConfig({ ...te.env, ...env });
  const app = await startTestApp(AppModule.forConfig(config, SecretStore.fromEnv({ ...te.env, ...env }), outside), installGateway);
  return { ...app, pipeline: app.app.get(GatewayPipeline) };
}

/** What an int-spec runs the gateway against, in this process (see startGatewayIntegration). */
export interface GatewayIntegration {
  /** The file's database and Redis prefix. */
  te: TestEnvironment;
  /** The gateway's in-house provider. */
  fake: FakeModelUpstream;
  /** management-api's token issuing, on the same database. */
  issuer: RunningApp;
  issue: IssueToken;
  gw: RunningApp & { pipeline: GatewayPipeline };
  /** Stops the gateway, the issuer and the fake, and drops the database and Redis keys. */
  close(): Promise<void>;
}

/**
 * The file's database and Redis, the fake upstream, the token issuer, and the gateway trusting the
 * issuer's tokens and calling the fake without retries; `env` adds to that or overrides it.
 */
export async function startGatewayIntegration(env: NodeJS.ProcessEnv = {}, outside: GatewayOutside = {}): Promise<GatewayIntegration> {
  const te = await createTestEnvironment();
  const stops: Array<() => Promise<void>> = [() => te.teardown()];
  const close = async (): Promise<void> => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  };
  try {
    const fake = await FakeModelUpstream.start();
    stops.push(() => fake.close());
    const { app: issuer, issue } = await startIssuer(te, TEST_ISSUER, TEST_AUDIENCE);
    stops.push(() => issuer.close());
    const gw = await startGateway(te, { OAUTH_ISSUER: TEST_ISSUER, OAUTH_AUDIENCE: TEST_AUDIENCE, PROVIDER_INHOUSE_URL: fake.url, PROVIDER_MAX_RETRIES: '0', ...env }, outside);
    stops.push(() => gw.close());
    return { te, fake, issuer, issue, gw, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** The test database, as the tests' DataSource offers it (TypeORM itself stays in repositories). */
export interface Sql {
  query<T = unknown>(sql: string, parameters?: unknown[]): Promise<T>;
}

export interface TenantSetup {
  plan?: 'free' | 'standard' | 'premium';
  entitlements?: Array<{ productKey: string; tier: string; validUntil?: Date }>;
  balance?: number;
  zeroRated?: boolean;
  hostedProviderAllowed?: boolean;
}

/** A tenant as management-api's admin routes would leave it. */
export async function createTenant(ds: Sql, setup: TenantSetup = {}): Promise<string> {
  const id = randomUUID();
  await ds.query(
    `INSERT INTO tenants (id, name, primary_email, plan, zero_rated, hosted_provider_allowed) VALUES ($1, $2, $3, $4, $5, $6)`,
    [id, `t-${id.slice(0, 8)}`, `ops-${id.slice(0, 8)}@example.test`, setup.plan ?? 'free', setup.zeroRated ?? false, setup.hostedProviderAllowed ?? false],
  );
  await equipTenant(ds, id, { entitlements: setup.entitlements, balance: setup.balance });
  return id;
}

/**
 * Entitlements and a credit balance for a tenant that exists (one signed up through management-api,
 * say), as the admin routes and a purchase would leave them; `plan` changes its plan.
 */
export async function equipTenant(ds: Sql, id: string, setup: Pick<TenantSetup, 'plan' | 'entitlements' | 'balance'>): Promise<void> {
  if (setup.plan !== undefined) await ds.query(`UPDATE tenants SET plan = $2 WHERE id = $1`, [id, setup.plan]);
  for (const e of setup.entitlements ?? []) {
    await ds.query(`INSERT INTO entitlements (tenant_id, product_key, tier, valid_until) VALUES ($1, $2, $3, $4)`, [id, e.productKey, e.tier, e.validUntil ?? null]);
  }
  if (setup.balance !== undefined) await ds.query(`INSERT INTO credit_balances (tenant_id, balance) VALUES ($1, $2)`, [id, setup.balance]);
}

/** A tenant's ledger rows and balance as Postgres holds them: the ledger's own test helpers, one copy. */
export { balanceOf, type LedgerRow, ledgerRows } from '@flagship/ledger/testing';
