import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { Client } from 'pg';
import { DATABASE_SSL_MODES, pgConnection } from '@flagship/persistence';
import { startTlsPostgres, type TlsPostgres } from '@flagship/testing';

const PASSWORD = 'ensure-db-pass/word';

/**
 * ensure-database.mjs runs before the build, so it cannot import pgConnection: it keeps its own copy of
 * the mapping (database-tls.mjs). These tests hold the copy to pgConnection, and run the script against
 * a cluster that takes TCP connections only over TLS.
 */
describe('ensure-database.mjs: TLS to Postgres with the meanings the apps give it', () => {
  let tls: TlsPostgres;
  beforeAll(async () => {
    tls = await startTlsPostgres(PASSWORD);
  }, 30_000);
  afterAll(() => tls?.destroy());

  type Env = { DATABASE_SSL_MODE?: string; DATABASE_SSL_CA_FILE?: string };
  /** A decision as JSON holds it (a function, the host name check turned off, as 'function'). */
  const asJson = (decision: unknown): unknown => JSON.parse(JSON.stringify(decision, (_k, v: unknown) => (typeof v === 'function' ? 'function' : v)));
  /** pgConnection's decisions, and database-tls.mjs's taken in node as the script runs (jest here cannot load an ES module): the URL pg gets and its TLS options, or 'refused'. */
  const decisions = (cases: Array<[string, Env]>): { apps: unknown[]; script: unknown[] } => {
    const program = `import { readFileSync } from 'node:fs';
      import { pgClientConfig } from ${JSON.stringify(join(__dirname, 'database-tls.mjs'))};
      const decide = ([url, env]) => { try { const c = pgClientConfig(url, env); return { url: c.connectionString, ssl: c.ssl }; } catch { return 'refused'; } };
      console.log(JSON.stringify(JSON.parse(readFileSync(0, 'utf8')).map(decide), (_k, v) => (typeof v === 'function' ? 'function' : v)));`;
    const script = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', program], { input: JSON.stringify(cases), encoding: 'utf8' }));
    const apps = cases.map(([url, env]) => {
      try {
        const c = pgConnection(url, { mode: env.DATABASE_SSL_MODE, caFile: env.DATABASE_SSL_CA_FILE });
        return asJson({ url: c.url, ssl: c.ssl });
      } catch {
        return 'refused';
      }
    });
    return { apps, script };
  };

  it('decides as pgConnection does for every mode, CA and where each is set, and refuses what it refuses', () => {
    const cases: Array<[Record<string, string>, Env]> = [];
    for (const mode of ['', ...DATABASE_SSL_MODES, 'prefer', 'allow', 'verify_full']) {
      for (const caFile of ['', tls.ca.certFile, 'system']) {
        for (const modeInUrl of [true, false]) {
          for (const caInUrl of [true, false]) {
            const params: Record<string, string> = {};
            const env: Env = {};
            if (mode !== '' && modeInUrl) params['sslmode'] = mode;
            if (mode !== '' && !modeInUrl) env.DATABASE_SSL_MODE = mode;
            if (caFile !== '' && caInUrl) params['sslrootcert'] = caFile;
            if (caFile !== '' && !caInUrl) env.DATABASE_SSL_CA_FILE = caFile;
            cases.push([params, env]);
          }
        }
      }
    }
    cases.push(
      [{ sslmode: 'require' }, { DATABASE_SSL_MODE: 'require' }],
      [{ sslmode: 'require' }, { DATABASE_SSL_MODE: 'verify-full' }],
      [{ sslmode: 'verify-full', sslrootcert: tls.ca.certFile }, { DATABASE_SSL_CA_FILE: tls.otherCa.certFile }],
      [{ sslmode: 'verify-full', sslrootcert: tls.ca.certFile }, { DATABASE_SSL_CA_FILE: tls.ca.certFile }],
      [{ sslmode: 'require', application_name: 'ensure' }, {}],
      ...['sslcert', 'sslkey', 'sslpassword', 'sslcrl', 'sslnegotiation', 'ssl', 'uselibpqcompat'].map((p): [Record<string, string>, object] => [{ sslmode: 'require', [p]: 'true' }, {}]),
    );
    const urls = cases.map(([params, env]): [string, Env] => {
      const u = new URL(tls.pg.url);
      for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
      return [u.toString(), env];
    });
    const { apps, script } = decisions(urls);
    urls.forEach(([url, env], i) => expect({ url, env, decision: script[i] }).toEqual({ url, env, decision: apps[i] }));
    const refused = apps.filter((d) => d === 'refused').length;
    // Both outcomes are exercised: the table is not all refusals, nor all connections.
    expect(refused).toBeGreaterThan(10);
    expect(cases.length - refused).toBeGreaterThan(10);
  });

  const ensure = (url: string, env: Record<string, string> = {}) =>
    spawnSync(process.execPath, [join(__dirname, 'ensure-database.mjs')], {
      env: { ...process.env, DATABASE_SSL_MODE: '', DATABASE_SSL_CA_FILE: '', ...env, DATABASE_URL: url },
      encoding: 'utf8',
      timeout: 20_000,
    });
  const exists = async (name: string): Promise<boolean> => {
    const { url, ssl } = pgConnection(tls.pg.url, { mode: 'verify-full', caFile: tls.ca.certFile });
    const c = new Client({ connectionString: url, ssl });
    await c.connect();
    try {
      return (await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1;
    } finally {
      await c.end();
    }
  };

  it("the URL's sslmode=require encrypts without checking the server, as libpq's does (pg alone would refuse this server)", async () => {
    const u = new URL(tls.pg.urlFor('shop_require'));
    u.searchParams.set('sslmode', 'require');
    const run = ensure(u.toString());
    expect([run.status, run.stdout.trim(), run.stderr]).toEqual([0, 'created database shop_require', '']);
    expect(await exists('shop_require')).toBe(true);
    // A second run finds it and creates nothing.
    const again = ensure(u.toString());
    expect([again.status, again.stdout]).toEqual([0, '']);
  });

  it('DATABASE_SSL_MODE and DATABASE_SSL_CA_FILE are honoured: verify-full with the CA connects, with another CA it is refused', async () => {
    const good = ensure(tls.pg.urlFor('shop_verified'), { DATABASE_SSL_MODE: 'verify-full', DATABASE_SSL_CA_FILE: tls.ca.certFile });
    expect([good.status, good.stdout.trim()]).toEqual([0, 'created database shop_verified']);
    expect(await exists('shop_verified')).toBe(true);
    const bad = ensure(tls.pg.urlFor('shop_untrusted'), { DATABASE_SSL_MODE: 'verify-full', DATABASE_SSL_CA_FILE: tls.otherCa.certFile });
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toMatch(/certificate/);
    expect(await exists('shop_untrusted')).toBe(false);
  });

  it('a setting the apps refuse stops it with one line, before connecting and without the password', async () => {
    const u = new URL(tls.pg.urlFor('shop_prefer'));
    u.searchParams.set('sslmode', 'prefer');
    const run = ensure(u.toString());
    expect([run.status, run.stderr]).toEqual([1, 'invalid configuration: sslmode prefer is not supported (use disable, require, verify-ca, verify-full)\n']);
    expect(run.stderr).not.toContain(PASSWORD);
    expect(await exists('shop_prefer')).toBe(false);
  });
});
