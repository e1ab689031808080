/**
 * The OAuth token endpoint and an authenticated read, per second and p99, against the BUILT
 * management-api started as a process (as `npm start` runs it), on loopback with real Postgres and
 * Redis on a throwaway database and key prefix.
 *
 *   npx nx run management-api:build --output-style=static
 *   TS_NODE_PROJECT=tsconfig.json node -r ts-node/register/transpile-only -r tsconfig-paths/register \
 *     tools/bench/oauth.ts [secondsPerCase] [connections]
 *
 * Set-up over plain HTTP: a dev identity provider account, the sign-up (which makes the user admin of
 * a personal tenant), and an OAuth client of that tenant. Then, one after the other, each after a
 * 1 s unmeasured warm-up and bounded in time (default 5 s, 16 connections):
 *   GET /healthz                   the baseline: the same process and middleware, no auth, no I/O
 *   POST /oauth/token              client_secret_basic: one scrypt of the secret, one ES256 signature
 *   GET /api/tenants (ID token)    the user's dev IdP token: verified, user and memberships looked up
 *   GET /api/tenants (client)      the client's access token: ES256 verified, revocation checked
 * Prints requests/s, p50 and p99 latency, non-2xx answers, and each case's throughput as a fraction of
 * the baseline (which is what compares across machines). autocannon runs in this process, so on a
 * small machine the load generator and the app share the cores: read the figures with the load average
 * printed before and after.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { createTestEnvironment, freePort, http } from '@flagship/testing';

const SECONDS = positiveInt(process.argv[2] ?? process.env['BENCH_SECONDS'], 5, 'seconds');
const CONNECTIONS = positiveInt(process.argv[3] ?? process.env['BENCH_CONNECTIONS'], 16, 'connections');
const MAIN_JS = join(__dirname, '..', '..', 'dist/apps/management-api/apps/management-api/src/main.js');
// High enough that the limiter counts but never refuses: a 429 would measure the limiter, not the route.
const NO_LIMIT = '100000000';

function positiveInt(raw: string | undefined, fallback: number, name: string): number {
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return n;
}

interface Row {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  ok: number;
  non2xx: number;
  errors: number;
}

async function measure(name: string, options: autocannon.Options): Promise<Row> {
  // Warm-up (JIT, connection and database pools), not measured.
  await autocannon({ ...options, duration: 1, connections: Math.min(4, CONNECTIONS) });
  const r = await autocannon({ ...options, duration: SECONDS, connections: CONNECTIONS, pipelining: 1 });
  return { name, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, ok: r['2xx'], non2xx: r.non2xx, errors: r.errors + r.timeouts };
}

/** Fails the run when a case would not measure what it says: a refused request is not a data point. */
function expectStatus(what: string, res: { status: number; text: string }, status: number): void {
  if (res.status !== status) throw new Error(`${what}: expected ${status}, got ${res.status} ${res.text.slice(0, 300)}`);
}

const loads = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

async function startApi(env: NodeJS.ProcessEnv, url: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [MAIN_JS], { env, stdio: ['ignore', 'inherit', 'inherit'] });
  // Polled by hand rather than with waitFor: an app that exits at start (bad configuration) is
  // reported at once instead of after the whole wait.
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`management-api exited with ${child.exitCode} during start-up`);
    if ((await http(`${url}/healthz`).catch(() => undefined))?.status === 200) return child;
    if (Date.now() > deadline) {
      child.kill('SIGTERM');
      throw new Error('management-api did not answer /healthz within 30 s');
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function main(): Promise<void> {
  if (!existsSync(MAIN_JS)) throw new Error(`${MAIN_JS} is missing: run npx nx run management-api:build first`);
  const loadBefore = loads();
  const te = await createTestEnvironment();
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  try {
    child = await startApi(
      {
        ...te.env,
        // The dev identity provider signs the bench user in; it is refused under NODE_ENV=production.
        NODE_ENV: 'development',
        IDP_MODE: 'dev',
        // Request logs at info would make the benchmark measure pino.
        LOG_LEVEL: 'warn',
        HOST: '127.0.0.1',
        PORT: String(port),
        PUBLIC_BASE_URL: base,
        RATE_LIMIT_FREE: NO_LIMIT,
        RATE_LIMIT_IP_PER_MINUTE: NO_LIMIT,
      },
      base,
    );

    const email = 'oauth-bench@flagship.test';
    const password = 'bench-password';
    const account = await http(`${base}/dev/idp/accounts`, { method: 'POST', json: { email, password } });
    expectStatus('dev idp account', account, 201);
    const idToken: string = account.body.idToken;
    const signup = await http(`${base}/api/v1/auth/signup`, { method: 'POST', json: { idToken, email, password } });
    expectStatus('signup', signup, 201);
    const tenantId: string = signup.body.data.canonical_tenant_id;

    const created = await http(`${base}/api/oauth/clients`, {
      method: 'POST',
      headers: { authorization: `Bearer ${idToken}`, 'x-tenant-id': tenantId },
      json: { name: 'bench', scopes: ['flags:read', 'flags:evaluate'] },
    });
    expectStatus('create oauth client', created, 201);
    const { clientId, clientSecret } = created.body as { clientId: string; clientSecret: string };

    // client_secret_basic, RFC 6749 section 2.3.1: id and secret form-encoded, then Basic.
    const basic = Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64');
    const tokenRequest = {
      method: 'POST' as const,
      headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials',
    };
    const token = await http(`${base}/oauth/token`, tokenRequest);
    expectStatus('token', token, 200);
    const accessToken: string = token.body.access_token;

    const userAuth = { authorization: `Bearer ${idToken}` };
    const clientAuth = { authorization: `Bearer ${accessToken}` };
    // Both callers must read the same thing, else the two rows compare different work.
    for (const [who, headers] of [['user', userAuth], ['client', clientAuth]] as const) {
      const tenants = await http(`${base}/api/tenants`, { headers });
      expectStatus(`GET /api/tenants as ${who}`, tenants, 200);
      const ids = (tenants.body as Array<{ id: string }>).map((t) => t.id);
      if (ids.length !== 1 || ids[0] !== tenantId) throw new Error(`GET /api/tenants as ${who} listed ${JSON.stringify(ids)}, expected [${tenantId}]`);
    }

    const rows: Row[] = [];
    rows.push(await measure('GET /healthz (baseline)', { url: `${base}/healthz` }));
    rows.push(await measure('POST /oauth/token (basic)', { url: `${base}/oauth/token`, ...tokenRequest }));
    rows.push(await measure('GET /api/tenants (ID token)', { url: `${base}/api/tenants`, headers: userAuth }));
    rows.push(await measure('GET /api/tenants (client)', { url: `${base}/api/tenants`, headers: clientAuth }));

    const baseline = rows[0].rps;
    console.log(`\nmanagement-api (built, one process), node ${process.version}, ${cpus().length} CPUs, loopback`);
    console.log(`${SECONDS} s per case after a 1 s warm-up, ${CONNECTIONS} connections; autocannon runs in the bench process`);
    console.log(`load average before: ${loadBefore}   after: ${loads()}\n`);
    console.log(
      `${'case'.padEnd(30)} ${'req/s'.padStart(8)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'2xx'.padStart(8)} ${'non-2xx'.padStart(8)} ${'errors'.padStart(7)} ${'vs baseline'.padStart(12)}`,
    );
    for (const r of rows) {
      console.log(
        `${r.name.padEnd(30)} ${r.rps.toFixed(0).padStart(8)} ${String(r.p50).padStart(7)} ${String(r.p99).padStart(7)} ${String(r.ok).padStart(8)} ${String(r.non2xx).padStart(8)} ${String(r.errors).padStart(7)} ${(r.rps / baseline).toFixed(3).padStart(12)}`,
      );
    }
  } finally {
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
    await te.teardown();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
