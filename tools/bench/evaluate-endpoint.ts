/**
 * The management API's evaluate endpoint under load, against the built app started as a process
 * (as `npm start` runs it), on loopback with real Postgres and Redis, next to its peer, Unleash
 * server 8.2's frontend API (installed on first use into tmp/bench-peers/unleash, see unleash-peer.ts).
 *
 *   npx nx run management-api:build --output-style=static && TS_NODE_PROJECT=tsconfig.json \
 *     node -r ts-node/register/transpile-only -r tsconfig-paths/register \
 *     tools/bench/evaluate-endpoint.ts [seconds] [connections] [rounds]
 *
 * In one run, in interleaved rounds (each case once per round): a bare node:http server answering a
 * fixed JSON (the ceiling of this machine), POST /api/flags/{key}/evaluate of a flag with 20 rules
 * (the matching one last, so all are scanned) with a user's ID token and with an OAuth client's
 * access token, and Unleash's POST /api/frontend with the same toggle as 20 strategies of one
 * constraint each (the 20th matches). Rate limits are lifted on both sides; logs at warn.
 * Prints requests/s, p50 and p99 per round, the ratio to Unleash, and Postgres transactions per
 * evaluation (pg_stat_database.xact_commit of each app's own database over the round: every query
 * outside a transaction is one).
 *
 * BENCH_BASELINE_MAIN=<another build's management-api main.js> adds that build as a second process on
 * the same database and Redis (cases `baseline, user ID token` and `baseline, client token`), measured
 * in the same interleaved rounds, so a change is compared with the build before it while the
 * machine's speed drifts under both alike. Each app case also prints the app process's own CPU µs per
 * request (its threads' scheduler run time over the round): on a shared machine throughput follows
 * whatever else runs, the CPU a request costs much less so.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { Client } from 'pg';
import { createTestEnvironment, freePort, http, waitFor } from '@flagship/testing';
import { cpuMicros } from './process-cpu';
import { startUnleash, UNLEASH_VERSION } from './unleash-peer';

const SECONDS = Number(process.argv[2] ?? 10);
const CONNECTIONS = Number(process.argv[3] ?? 64);
const ROUNDS = Number(process.argv[4] ?? 2);
const root = join(__dirname, '..', '..');
const FLAG = 'bench-20-rules';

interface Case {
  name: string;
  opts: autocannon.Options;
  /** The database whose transactions are counted, if the case has one. */
  database?: string;
  /** The process whose CPU per request is read, if the case has one. */
  pid?: number;
  results: Array<{ r: autocannon.Result; xactsPerRequest?: number; cpuUsPerRequest?: number }>;
}

async function run(opts: autocannon.Options, duration = SECONDS): Promise<autocannon.Result> {
  return autocannon({ duration, connections: CONNECTIONS, pipelining: 1, ...opts });
}

/** Committed transactions of a database so far (the statistics collector lags by up to a second). */
async function xacts(pg: Client, database: string): Promise<number> {
  await new Promise((r) => setTimeout(r, 1200));
  await pg.query('SELECT pg_stat_clear_snapshot()');
  const { rows } = await pg.query<{ n: string }>('SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = $1', [database]);
  return Number(rows[0]?.n ?? 0);
}

const fmt = (n: number, w: number): string => String(n).padStart(w);

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function line(name: string, r: autocannon.Result, xactsPerRequest?: number, cpuUsPerRequest?: number): string {
  const pg = xactsPerRequest === undefined ? '' : `   pg xacts/eval ${xactsPerRequest.toFixed(4)}`;
  const cpu = cpuUsPerRequest === undefined ? '' : `   app CPU ${cpuUsPerRequest.toFixed(1)} µs/req`;
  return `${name.padEnd(34)} ${fmt(Math.round(r.requests.average), 8)} req/s   p50 ${fmt(r.latency.p50, 4)} ms   p99 ${fmt(r.latency.p99, 4)} ms   non-2xx ${r.non2xx}   errors ${r.errors}${pg}${cpu}`;
}

/** A bare node:http server in its own process: the fixed JSON answer, nothing else. */
function startBaseline(port: number) {
  const code = `require('node:http').createServer((q,s)=>{q.resume();q.on('end',()=>{const b='{"key":"${FLAG}","enabled":true,"value":true,"reason":"RULE_MATCH"}';s.writeHead(200,{'content-type':'application/json','content-length':Buffer.byteLength(b)});s.end(b);});}).listen(${port},'127.0.0.1')`;
  return spawn(process.execPath, ['-e', code], { stdio: 'inherit' });
}

async function main(): Promise<void> {
  const te = await createTestEnvironment();
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const ourDatabase = new URL(te.env['DATABASE_URL']!).pathname.slice(1);
  const adminUrl = new URL(te.env['DATABASE_URL']!);
  adminUrl.pathname = '/postgres';
  // BENCH_NODE_ARGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", profiles the app under load.
  const nodeArgs = (process.env['BENCH_NODE_ARGS'] ?? '').split(' ').filter(Boolean);
  const startApp = (main: string, appPort: number) =>
    spawn(process.execPath, [...nodeArgs, main], {
      env: {
        ...te.env,
        // The dev identity provider signs the bench user in; it is refused under NODE_ENV=production.
        NODE_ENV: 'development',
        IDP_MODE: 'dev',
        LOG_LEVEL: 'warn',
        PORT: String(appPort),
        PUBLIC_BASE_URL: base,
        RATE_LIMIT_FREE: '100000000',
        RATE_LIMIT_IP_PER_MINUTE: '100000000',
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
  const child = startApp(join(root, 'dist/apps/management-api/apps/management-api/src/main.js'), port);
  const baselineMain = process.env['BENCH_BASELINE_MAIN'];
  const otherPort = baselineMain ? await freePort() : 0;
  const other = baselineMain ? startApp(baselineMain, otherPort) : undefined;
  const baselinePort = await freePort();
  const baselineChild = startBaseline(baselinePort);
  const pg = new Client({ connectionString: adminUrl.toString() });
  let unleash: Awaited<ReturnType<typeof startUnleash>> | undefined;
  try {
    await pg.connect();
    await waitFor(async () => (await http(`${base}/healthz`).catch(() => ({ status: 0 }))).status === 200, 20000, 100);
    if (other) await waitFor(async () => (await http(`http://127.0.0.1:${otherPort}/healthz`).catch(() => ({ status: 0 }))).status === 200, 20000, 100);
    await waitFor(async () => (await http(`http://127.0.0.1:${baselinePort}/`).catch(() => ({ status: 0 }))).status === 200, 5000, 50);
    const email = 'bench@flagship.test';
    const { idToken } = (await http(`${base}/dev/idp/accounts`, { method: 'POST', json: { email, password: 'bench-password' } })).body;
    const signup = await http(`${base}/api/v1/auth/signup`, { method: 'POST', json: { idToken, email, password: 'bench-password' } });
    const tenantId: string = signup.body.data.canonical_tenant_id;
    const userHeaders = { authorization: `Bearer ${idToken}`, 'x-tenant-id': tenantId, 'content-type': 'application/json' };
    const flag = await http(`${base}/api/flags`, { method: 'POST', headers: userHeaders, json: { key: FLAG, name: 'bench', type: 'boolean', defaultValue: false, enabled: true } });
    const [on] = flag.body.variations.map((v: { id: string }) => v.id);
    const rules = Array.from({ length: 20 }, (_, i) => ({
      id: `r${i}`,
      clauses:
        i === 19
          ? [{ attribute: 'country', op: 'in', values: ['NO'] }]
          : [
              { attribute: 'country', op: 'in', values: [`X${i}`, `Y${i}`] },
              { attribute: 'email', op: 'endsWith', values: [`@nowhere${i}.test`] },
            ],
      variationId: on,
    }));
    const patched = await http(`${base}/api/flags/${FLAG}`, { method: 'PATCH', headers: userHeaders, json: { rules } });
    if (patched.status !== 200) throw new Error(`patch failed: ${patched.status} ${patched.text}`);

    // An OAuth client of the tenant (client credentials), the other kind of caller.
    const created = await http(`${base}/api/oauth/clients`, { method: 'POST', headers: userHeaders, json: { name: 'bench', scopes: ['flags:evaluate'] } });
    if (created.status !== 201) throw new Error(`create oauth client: ${created.status} ${created.text}`);
    const basic = Buffer.from(`${encodeURIComponent(created.body.clientId)}:${encodeURIComponent(created.body.clientSecret)}`).toString('base64');
    const token = await http(`${base}/oauth/token`, {
      method: 'POST',
      headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials',
    });
    if (token.status !== 200) throw new Error(`token: ${token.status} ${token.text}`);
    const clientHeaders = { authorization: `Bearer ${token.body.access_token}`, 'content-type': 'application/json' };

    const body = JSON.stringify({ userId: 'user-42', attributes: { country: 'NO', email: 'u@example.com' } });
    const evaluateUrl = `${base}/api/flags/${FLAG}/evaluate`;
    const otherUrl = `http://127.0.0.1:${otherPort}/api/flags/${FLAG}/evaluate`;
    for (const url of other ? [evaluateUrl, otherUrl] : [evaluateUrl]) {
      for (const headers of [userHeaders, clientHeaders]) {
        const check = await http(url, { method: 'POST', headers, body });
        if (check.body.reason !== 'RULE_MATCH' || check.body.ruleId !== 'r19') throw new Error(`unexpected evaluation: ${check.status} ${check.text}`);
      }
    }

    // BENCH_WITHOUT_PEER=1 leaves Unleash out: quicker rounds while profiling ours (no ratio then).
    const withPeer = process.env['BENCH_WITHOUT_PEER'] !== '1';
    if (withPeer) unleash = await startUnleash(root, adminUrl.toString(), FLAG);

    const cases: Case[] = [
      { name: 'bare node:http fixed JSON', opts: { url: `http://127.0.0.1:${baselinePort}/`, method: 'POST', body }, results: [] },
      { name: 'ours, user ID token', opts: { url: evaluateUrl, method: 'POST', headers: userHeaders, body }, database: ourDatabase, pid: child.pid, results: [] },
      { name: 'ours, client token', opts: { url: evaluateUrl, method: 'POST', headers: clientHeaders, body }, database: ourDatabase, pid: child.pid, results: [] },
      ...(unleash ? [{ name: `Unleash ${UNLEASH_VERSION} frontend API`, opts: { ...unleash.request }, database: unleash.database, results: [] }] : []),
      ...(other
        ? [
            { name: 'baseline, user ID token', opts: { url: otherUrl, method: 'POST' as const, headers: userHeaders, body }, database: ourDatabase, pid: other.pid, results: [] },
            { name: 'baseline, client token', opts: { url: otherUrl, method: 'POST' as const, headers: clientHeaders, body }, database: ourDatabase, pid: other.pid, results: [] },
          ]
        : []),
    ];
    for (const c of cases) await run(c.opts, 2); // warm-up
    // What each app's database commits with no traffic (background jobs, caches refreshing), per second.
    const idleFrom = { ours: await xacts(pg, ourDatabase), unleash: unleash ? await xacts(pg, unleash.database) : 0, at: performance.now() };
    await new Promise((r) => setTimeout(r, SECONDS * 1000));
    const idleS = (performance.now() - idleFrom.at) / 1000;
    const idle = {
      ours: ((await xacts(pg, ourDatabase)) - idleFrom.ours) / idleS,
      unleash: unleash ? ((await xacts(pg, unleash.database)) - idleFrom.unleash) / idleS : 0,
    };
    for (let round = 0; round < ROUNDS; round++) {
      // Every other round backwards, so neither build always runs first (or just after the other).
      for (const c of round % 2 === 0 ? cases : [...cases].reverse()) {
        const before = c.database === undefined ? 0 : await xacts(pg, c.database);
        const cpuBefore = c.pid === undefined ? 0 : cpuMicros(c.pid);
        const r = await run(c.opts);
        const cpuUsPerRequest = c.pid === undefined ? undefined : (cpuMicros(c.pid) - cpuBefore) / Math.max(1, r.requests.total);
        const xactsPerRequest = c.database === undefined ? undefined : ((await xacts(pg, c.database)) - before) / Math.max(1, r.requests.total);
        c.results.push({ r, xactsPerRequest, cpuUsPerRequest });
      }
    }

    console.log(`\nevaluate endpoints, ${CONNECTIONS} connections, ${SECONDS} s per case, ${ROUNDS} interleaved rounds, loopback`);
    console.log(`idle Postgres transactions/s: ours ${idle.ours.toFixed(1)}, Unleash ${idle.unleash.toFixed(1)} (the per-evaluation figures below include these)`);
    for (let round = 0; round < ROUNDS; round++) {
      console.log(`round ${round + 1}`);
      for (const c of cases) console.log('  ' + line(c.name, c.results[round]!.r, c.results[round]!.xactsPerRequest, c.results[round]!.cpuUsPerRequest));
    }
    const mean = (c: Case): number => c.results.reduce((s, x) => s + x.r.requests.average, 0) / c.results.length;
    const peer = unleash ? cases[3] : undefined;
    const baselines = other ? cases.slice(-2) : [];
    for (const [i, c] of cases.slice(1, 3).entries()) {
      const worstP99 = Math.max(...c.results.map((x) => x.r.latency.p99));
      const ratio = peer ? `${(mean(c) / mean(peer)).toFixed(2)}x Unleash's throughput (mean of rounds)` : `${mean(c).toFixed(0)} req/s (mean of rounds)`;
      const b = baselines[i];
      const cpu = (k: Case): number => median(k.results.map((x) => x.cpuUsPerRequest ?? NaN));
      const vsBaseline = b
        ? `; ${(mean(c) / mean(b)).toFixed(3)}x the baseline's ${mean(b).toFixed(0)} req/s (worst p99 ${Math.max(...b.results.map((x) => x.r.latency.p99))} ms); ` +
          `app CPU per request (median of rounds) ${cpu(c).toFixed(1)} µs vs the baseline's ${cpu(b).toFixed(1)} µs (${(cpu(c) / cpu(b)).toFixed(3)}x)`
        : '';
      console.log(`${c.name}: ${ratio}, worst p99 ${worstP99} ms${vsBaseline}`);
    }
  } finally {
    await unleash?.stop().catch((err: unknown) => console.error('stopping unleash:', err));
    await pg.end().catch(() => undefined);
    baselineChild.kill('SIGTERM');
    for (const app of other ? [child, other] : [child]) {
      app.kill('SIGTERM');
      await new Promise((r) => app.once('exit', r));
    }
    await te.teardown();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
