import { randomBytes } from 'node:crypto';
import { Client, type QueryResult, type QueryResultRow } from 'pg';
import type { SecretSource } from '@flagship/oauth';
import { bootstrapService, type RunningApp, runningApp } from '@flagship/service-kit';
import { createTestEnvironment, freePort, http, type HttpResult, type TcpProxy, type TestEnvironment } from '@flagship/testing';
import { AppModule } from '../app.module';
import { configureManagementApi } from '../configure';
import { loadManagementApiConfig } from '../env.schema';

export const PLATFORM_ADMIN = 'root@flagship.test';

export interface SignedUp {
  email: string;
  idToken: string;
  userId: string;
  tenantId: string;
}

/**
 * One management-api on its own database and Redis prefix, with the dev identity provider, and
 * helpers that drive it over HTTP the way a frontend does.
 */
export class ManagementApiFixture {
  /** One connection for sql(), opened at its first use. */
  private db: Promise<Client> | undefined;

  private constructor(
    readonly te: TestEnvironment,
    readonly svc: RunningApp,
  ) {}

  /**
   * `through`: proxies the app reaches Postgres and Redis by, for tests that cut them (outages).
   * `secrets`: where secrets are read instead of the environment (a SecretStore on a fake Secrets Manager, say).
   */
  static async start(
    extraEnv: NodeJS.ProcessEnv = {},
    through: { postgres?: TcpProxy; redis?: TcpProxy } = {},
    secrets?: SecretSource,
  ): Promise<ManagementApiFixture> {
    // Many sign-ups come from one test address: the per-address limit is lifted unless a test sets it.
    const te = await createTestEnvironment({ IDP_MODE: 'dev', PLATFORM_ADMIN_EMAILS: PLATFORM_ADMIN, RATE_LIMIT_IP_PER_MINUTE: '100000', ...extraEnv });
    // The dev IdP's issuer is the API's own address, known only once it listens: PUBLIC_BASE_URL is fixed up front.
    const port = await freePort();
    const env: NodeJS.ProcessEnv = { ...te.env, PORT: String(port), PUBLIC_BASE_URL: `http://127.0.0.1:${port}` };
    if (through.postgres) env['DATABASE_URL'] = through.postgres.rewrite(te.db.url);
    if (through.redis) env['REDIS_URL'] = through.redis.rewrite(te.redis.url);
    const config = loadManagementApiConfig(env);
    const app = await bootstrapService(AppModule.forConfig(config, secrets), { port, host: '127.0.0.1', handleSignals: false, configure: configureManagementApi });
    const svc: RunningApp = runningApp(app);
    te.env = env;
    return new ManagementApiFixture(te, svc);
  }

  get url(): string {
    return this.svc.url;
  }

  /** The internal port: /metrics and the detailed /readyz. */
  get metricsUrl(): string {
    if (this.svc.metricsUrl === undefined) throw new Error('the app has no internal port (METRICS_PORT)');
    return this.svc.metricsUrl;
  }

  async stop(): Promise<void> {
    await (await this.db?.catch(() => undefined))?.end();
    await this.svc.close();
    await this.te.teardown();
  }

  /**
   * A statement on this file's database, straight and not through any proxy given to start(): for
   * writing what another app (the gateway, billing-worker) would write, and reading what the API left.
   */
  async sql<R extends QueryResultRow = any>(text: string, params: unknown[] = []): Promise<QueryResult<R>> {
    this.db ??= (async () => {
      const client = new Client({ connectionString: this.te.db.url });
      await client.connect();
      return client;
    })();
    return (await this.db).query<R>(text, params);
  }

  /** A request with an optional bearer token and X-Tenant-ID. */
  call<T = any>(method: string, path: string, opts: { token?: string; tenant?: string; json?: unknown; headers?: Record<string, string> } = {}): Promise<HttpResult<T>> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.token) headers['authorization'] = `Bearer ${opts.token}`;
    if (opts.tenant) headers['x-tenant-id'] = opts.tenant;
    return http<T>(`${this.url}${path}`, { method, headers, json: opts.json });
  }

  /** A dev IdP account and its ID token. */
  async idToken(email: string, password = 'correct-horse-1'): Promise<string> {
    const res = await this.call('POST', '/dev/idp/accounts', { json: { email, password } });
    if (res.status === 409) return (await this.call('POST', '/dev/idp/token', { json: { email, password } })).body.idToken;
    if (res.status !== 201) throw new Error(`dev idp: ${res.status} ${res.text}`);
    return res.body.idToken;
  }

  /** Signs a new person up and returns their token, user id and personal tenant. */
  async signUp(email = `u${randomBytes(4).toString('hex')}@flagship.test`): Promise<SignedUp> {
    const idToken = await this.idToken(email);
    const res = await this.call('POST', '/api/v1/auth/signup', { json: { idToken, email, password: 'correct-horse-1' } });
    if (res.status !== 201) throw new Error(`signup: ${res.status} ${res.text}`);
    return { email, idToken, userId: res.body.data.user.uid, tenantId: res.body.data.canonical_tenant_id };
  }

  /**
   * Makes `email` a member of the tenant with `role` the way people do: the admin invites, the
   * invitee (signed up now unless given) accepts. Returns the member.
   */
  async addMember(admin: SignedUp, tenantId: string, email: string, role: string, invitee?: SignedUp): Promise<SignedUp> {
    const invited = await this.call('POST', `/api/tenants/${tenantId}/users`, { token: admin.idToken, json: { email, role } });
    if (invited.status !== 201) throw new Error(`invite: ${invited.status} ${invited.text}`);
    const member = invitee ?? (await this.signUp(email));
    const accepted = await this.call('POST', `/api/invitations/${invited.body.id}/accept`, { token: member.idToken });
    if (accepted.status !== 200) throw new Error(`accept: ${accepted.status} ${accepted.text}`);
    return member;
  }
}
