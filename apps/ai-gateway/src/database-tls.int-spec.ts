import { ConfigError, SecretStore } from '@flagship/config';
import { LedgerDurableConnections } from '@flagship/ledger';
import { DATA_SOURCE, runMigrations } from '@flagship/persistence';
import type { RunningApp } from '@flagship/service-kit';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createTestEnvironment, http, startTlsPostgres, type TestEnvironment, type TlsPostgres } from '@flagship/testing';
import type { DataSource } from 'typeorm';
import { AppModule } from './app.module';
import { loadAiGatewayConfig } from './env.schema';
import { startGateway, TEST_AUDIENCE, TEST_ISSUER } from './testing/gateway.fixture';

jest.setTimeout(30_000);

/**
 * The gateway opens two pools (the app's, and the durable ledger connections of
 * GATEWAY_LEDGER_SYNCHRONOUS_COMMIT=on): both take DATABASE_SSL_MODE and DATABASE_SSL_CA_FILE, against
 * a Postgres of this file's own that accepts TCP only over TLS with a certificate of a CA made here.
 */
describe('ai-gateway over TLS to Postgres', () => {
  let tls: TlsPostgres;
  let te: TestEnvironment;
  let gw: RunningApp | undefined;

  beforeAll(async () => {
    tls = await startTlsPostgres('gateway-tls-pw');
    await runMigrations(tls.pg.url, { mode: 'verify-full', caFile: tls.ca.certFile });
    te = await createTestEnvironment();
  });

  afterAll(async () => {
    await gw?.close();
    await te?.teardown();
    await tls?.destroy();
  });

  const env = (extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv => ({
    DATABASE_URL: tls.pg.url,
    OAUTH_ISSUER: TEST_ISSUER,
    OAUTH_AUDIENCE: TEST_AUDIENCE,
    PROVIDER_INHOUSE_URL: 'http://127.0.0.1:9',
    GATEWAY_LEDGER_SYNCHRONOUS_COMMIT: 'on',
    ...extra,
  });

  it('verify-full with the CA: ready, and every connection it holds is TLS (its pool and the durable ledger connections)', async () => {
    gw = await startGateway(te, env({ DATABASE_SSL_MODE: 'verify-full', DATABASE_SSL_CA_FILE: tls.ca.certFile }));
    expect((await http(`${gw.url}/readyz`)).status).toBe(200);
    const sslOf = async (ds: DataSource) =>
      ((await ds.query('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()')) as Array<{ ssl: boolean }>)[0]!.ssl;
    expect(await sslOf(gw.app.get<DataSource>(DATA_SOURCE))).toBe(true);
    const durable = gw.app.get(LedgerDurableConnections);
    expect(durable).not.toBeNull();
    expect(await sslOf(durable.ds)).toBe(true);
    // The server's view: every connection of the gateway's two pools came over TLS.
    const rows = (await durable.ds.query(
      `SELECT a.application_name, s.ssl FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) WHERE a.application_name IN ('ai-gateway', 'flagship-ledger-durable')`,
    )) as Array<{ application_name: string; ssl: boolean }>;
    expect(new Set(rows.map((r) => r.application_name))).toEqual(new Set(['ai-gateway', 'flagship-ledger-durable']));
    expect(rows.every((r) => r.ssl)).toBe(true);
    // The CA bundle's expiry, for the FlagshipDatabaseCaExpiring alert: the test CA's own notAfter.
    const metrics = (await http(`${gw.metricsUrl}/metrics`)).text;
    const line = metrics.split('\n').find((l) => l.startsWith('database_tls_ca_expiry_timestamp_seconds{'));
    const notAfter = Date.parse(new X509Certificate(readFileSync(tls.ca.certFile)).validTo) / 1000;
    expect(line).toBe(`database_tls_ca_expiry_timestamp_seconds{file="${tls.ca.certFile}",service="ai-gateway"} ${notAfter}`);
    await gw.close();
    gw = undefined;
  });

  it('the durable ledger connections refuse what the settings refuse: no TLS, or a certificate for another name', async () => {
    await expect(LedgerDurableConnections.open(tls.pg.url, { mode: 'disable' })).rejects.toThrow(/no pg_hba\.conf entry .*no encryption/);
    await expect(LedgerDurableConnections.open(tls.pg.urlFor('postgres', 'localhost'), { mode: 'verify-full', caFile: tls.ca.certFile })).rejects.toThrow(
      /^Postgres TLS \(mode verify-full, .*Hostname\/IP does not match/,
    );
  });

  it('bad TLS settings fail while main.ts builds the app, as one ConfigError line', () => {
    const config = loadAiGatewayConfig({ ...te.env, ...env({ DATABASE_SSL_MODE: 'verify-full', DATABASE_SSL_CA_FILE: '/nonexistent/ca.pem' }) });
    expect(() => AppModule.forConfig(config, SecretStore.fromEnv({}))).toThrow(ConfigError);
    expect(() => AppModule.forConfig(config, SecretStore.fromEnv({}))).toThrow(/^invalid configuration: DATABASE_SSL_CA_FILE cannot be read \(\/nonexistent\/ca\.pem: ENOENT\)$/);
    expect(() => loadAiGatewayConfig({ ...te.env, ...env({ DATABASE_SSL_MODE: 'prefer' }) })).toThrow(/^invalid configuration: DATABASE_SSL_MODE is invalid/);
  });
});
