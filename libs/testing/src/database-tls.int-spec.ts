import { copyFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ConfigError } from '@flagship/config';
import { DATA_SOURCE, openDataSource, PersistenceModule, pgConnection, runMigrations } from '@flagship/persistence';
import type { DataSource } from 'typeorm';
import type { DisposablePostgres } from './processes';
import type { TestCa } from './test-certificates';
import { startTlsPostgres, type TlsPostgres } from './tls-postgres';

const PASSWORD = 'tls-test-pass/word';

/**
 * TLS to Postgres through the one DataSource factory, against a cluster of this file's own that takes
 * TCP connections only over TLS (pg_hba hostssl, SCRAM password) with a certificate for 127.0.0.1
 * signed by a CA made here with openssl.
 */
describe('database TLS (a real hostssl-only Postgres)', () => {
  let server: TlsPostgres;
  let ca: TestCa;
  let otherCa: TestCa;
  let pg: DisposablePostgres;

  beforeAll(async () => {
    server = await startTlsPostgres(PASSWORD);
    ({ ca, otherCa, pg } = server);
  }, 30_000);

  afterAll(() => server?.destroy());

  /** Whether the server sees this DataSource's connection as TLS (pg_stat_ssl), and the connection closed. */
  const connectAndAsk = async (url: string, tls: { mode?: string; caFile?: string }): Promise<boolean> => {
    const ds = await openDataSource({ url, tls, poolSize: 1 });
    try {
      const [row] = (await ds.query('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()')) as Array<{ ssl: boolean }>;
      return row!.ssl;
    } finally {
      await ds.destroy();
    }
  };
  const refusal = async (url: string, tls: { mode?: string; caFile?: string }): Promise<string> => {
    const err: unknown = await connectAndAsk(url, tls).then(
      () => 'connected',
      (e: unknown) => e,
    );
    // Not toBeInstanceOf(Error): errors made inside node's TLS code come from another realm than jest's.
    expect(err).toHaveProperty('message');
    const message = String((err as Error).message);
    expect(message).not.toContain(PASSWORD);
    return message;
  };

  it('verify-full with the CA that signed the server certificate connects over TLS, from the settings or from the URL', async () => {
    expect(await connectAndAsk(pg.url, { mode: 'verify-full', caFile: ca.certFile })).toBe(true);
    const inUrl = new URL(pg.url);
    inUrl.searchParams.set('sslmode', 'verify-full');
    inUrl.searchParams.set('sslrootcert', ca.certFile);
    expect(await connectAndAsk(inUrl.toString(), {})).toBe(true);
  });

  it("PersistenceModule makes its pool from the decision it took at start-up: the CA bundle is read once, not again when the pool is made", async () => {
    const bundle = join(dirname(ca.certFile), 'rotating-ca.pem');
    copyFileSync(ca.certFile, bundle);
    const module = PersistenceModule.forRoot({ url: pg.url, tls: { mode: 'verify-full', caFile: bundle }, poolSize: 1 });
    // The file changes between the decision and the pool (a rotation mid-start): the pool keeps the first.
    copyFileSync(otherCa.certFile, bundle);
    const provider = module.providers!.find((p) => typeof p === 'object' && 'provide' in p && p.provide === DATA_SOURCE) as { useFactory: () => Promise<DataSource> };
    const ds = await provider.useFactory();
    try {
      expect(await ds.query('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()')).toEqual([{ ssl: true }]);
    } finally {
      await ds.destroy();
    }
  });

  it('the migrate command connects through the same settings', async () => {
    const applied = await runMigrations(pg.url, { mode: 'verify-full', caFile: ca.certFile });
    expect(applied.length).toBeGreaterThan(0);
  }, 20_000);

  it('verify-full with another CA is refused: the certificate is not trusted, and the error says which mode and CAs were tried', async () => {
    const message = await refusal(pg.url, { mode: 'verify-full', caFile: otherCa.certFile });
    expect(message).toMatch(/^Postgres TLS \(mode verify-full, trusting .*ca\.crt\): (unable to verify the first certificate|unable to get local issuer certificate|self[- ]signed certificate in certificate chain)/);
    // Node's public CAs do not vouch for a private CA's certificate either.
    expect(await refusal(pg.url, { mode: 'verify-full' })).toMatch(/^Postgres TLS \(mode verify-full, trusting Node's built-in public CAs\): /);
  });

  it('verify-full to a host name the certificate does not hold is refused; verify-ca (the chain only) accepts it', async () => {
    const byName = pg.urlFor('postgres', 'localhost');
    expect(await refusal(byName, { mode: 'verify-full', caFile: ca.certFile })).toMatch(/^Postgres TLS \(mode verify-full, trusting .*ca\.crt\): Hostname\/IP does not match certificate's altnames: Host: localhost/);
    expect(await connectAndAsk(byName, { mode: 'verify-ca', caFile: ca.certFile })).toBe(true);
  });

  it('disable (the default) against a TLS-only server is refused by the server; require encrypts without checking', async () => {
    expect(await refusal(pg.url, {})).toMatch(/^Postgres TLS \(mode disable, trusting none\): no pg_hba\.conf entry for host "127\.0\.0\.1".*no encryption/);
    expect(await refusal(pg.url, { mode: 'disable' })).toMatch(/no encryption/);
    expect(await connectAndAsk(pg.url, { mode: 'require' })).toBe(true);
    // The URL's sslmode=require means the same (pg alone would read it as verify-full and refuse this server).
    const requireInUrl = new URL(pg.url);
    requireInUrl.searchParams.set('sslmode', 'require');
    expect(await connectAndAsk(requireInUrl.toString(), {})).toBe(true);
    // require with a CA file checks the chain, as libpq's does.
    expect(await refusal(pg.url, { mode: 'require', caFile: otherCa.certFile })).toMatch(/^Postgres TLS \(mode require/);
  });

  it('settings it cannot honour fail before any connection, in one line without the password', () => {
    const dir = join(ca.certFile, '..');
    writeFileSync(join(dir, 'not-a-cert.pem'), 'hello\n');
    const url = pg.url;
    const withParams = (params: Record<string, string>) => {
      const u = new URL(url);
      for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
      return u.toString();
    };
    const cases: Array<[string, { mode?: string; caFile?: string }, RegExp]> = [
      [url, { mode: 'verify-full', caFile: join(dir, 'missing.pem') }, /DATABASE_SSL_CA_FILE cannot be read \(.*missing\.pem: ENOENT\)/],
      [url, { mode: 'verify-full', caFile: join(dir, 'not-a-cert.pem') }, /DATABASE_SSL_CA_FILE holds no PEM certificate/],
      [url, { mode: 'verify-ca' }, /DATABASE_SSL_MODE=verify-ca needs DATABASE_SSL_CA_FILE/],
      [url, { mode: 'verify_full' }, /DATABASE_SSL_MODE is invalid \("verify_full"/],
      [url, { caFile: ca.certFile }, /DATABASE_SSL_CA_FILE is set but the database TLS mode is disable/],
      [withParams({ sslmode: 'require' }), { mode: 'verify-full', caFile: ca.certFile }, /DATABASE_SSL_MODE=verify-full disagrees with DATABASE_URL's sslmode=require/],
      [withParams({ sslmode: 'prefer' }), {}, /sslmode=prefer is not supported/],
      [withParams({ sslcert: '/tmp/client.crt', sslkey: '/tmp/client.key' }), {}, /DATABASE_URL's sslcert parameter is not supported \(client certificates/],
      [withParams({ ssl: 'true' }), {}, /DATABASE_URL's ssl parameter is not supported/],
    ];
    for (const [u, tls, why] of cases) {
      let err: unknown;
      try {
        pgConnection(u, tls);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      const message = (err as Error).message;
      expect(message).toMatch(/^invalid configuration: /);
      expect(message).toMatch(why);
      expect(message).not.toContain('\n');
      expect(message).not.toContain(PASSWORD);
    }
  });
});
