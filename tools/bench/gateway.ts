/**
 * Load test of the AI gateway against calling the model upstream directly and through Portkey's
 * open-source gateway, all against the same fake OpenAI-compatible upstream (0 ms latency), in one run.
 *
 *   npx nx run-many -t build -p management-api,ai-gateway --output-style=static
 *   TS_NODE_PROJECT=tsconfig.json node -r ts-node/register/transpile-only -r tsconfig-paths/register \
 *     tools/bench/gateway.ts [secondsPerCase=10] [rounds=3]
 *
 * Every server is a child process on loopback: the fake upstream (tools/dev/fake-upstream.ts), the
 * built management-api (only to issue the OAuth access token, through /oauth/token as clients do),
 * the built ai-gateway (full pipeline: token, product key, tenant, entitlement, rate limit, credit
 * reservation and pending ledger row in Postgres, provider call, settlement; a billable tenant on a
 * database of its own), and `@portkey-ai/gateway` as a plain proxy (`--port=N --headless`; headers
 * `x-portkey-provider: openai`, `x-portkey-custom-host`). The load generator (autocannon) is this
 * process. The same non-streamed chat completion body goes to each.
 *
 * For each case, interleaved over `rounds` (median shown):
 *   max     the most requests/s at 32 connections (closed loop);
 *   fixed   p50/p99 at a fixed 200 requests/s, open loop and evenly spaced (where queueing does
 *           not hide the work), each request timed in microseconds from when it was due.
 * and our added latency over direct at 200 requests/s. Targets (issue 10): added p50 <= 1 ms and
 * p99 <= 5 ms; our max throughput >= 5 x Portkey's.
 *
 * BENCH_CASES=direct,gateway,portkey picks cases (default all three); BENCH_CONNECTIONS changes the
 * max measurement's 32 connections (the issue's figure), to see whether a case is bound by latency.
 * For comparing two versions of the gateway on a noisy machine, BENCH_BASELINE_MAIN=<another build's
 * main.js> (and/or BENCH_BASELINE_ENV="K=V ...") adds a case `baseline gateway`, started the same way
 * and measured in the same interleaved rounds, so drift in the machine's speed falls on both.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { Pool } from 'undici';
import pg from 'pg';
import { hashSecret } from '@flagship/config';
import { createTestEnvironment, freePort, type TestEnvironment, waitFor } from '@flagship/testing';

const SECONDS = Number(process.argv[2] ?? process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Number(process.argv[3] ?? process.env.BENCH_ROUNDS ?? 3);
const WARMUP_SECONDS = Math.min(3, SECONDS);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const FIXED_RATE = 200;
const FIXED_CONNECTIONS = 16;
const CASES = (process.env.BENCH_CASES ?? 'direct,gateway,portkey').split(',').map((c) => c.trim());
const root = join(__dirname, '..', '..');
const mainOf = (app: string): string => join(root, `dist/apps/${app}/apps/${app}/src/main.js`);

const UPSTREAM_KEY = 'bench-upstream-key';
const TENANT_ID = '00000000-0000-4000-8000-0000000be4c0';
const CLIENT_ID = 'ffc_benchGatewayClient0000001';
const CLIENT_SECRET = 'ffs_bench-only-secret-not-for-use-anywhere-else';
const BODY = JSON.stringify({ model: 'fake-chat-1', messages: [{ role: 'user', content: 'hello from the gateway benchmark' }] });

// ---- processes ---------------------------------------------------------------------------------

interface Proc {
  name: string;
  child: ChildProcess;
  output: () => string;
}

const procs: Proc[] = [];

function launch(name: string, args: string[], env: NodeJS.ProcessEnv): Proc {
  const child = spawn(process.execPath, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  // Keep the tail only: a chatty server must not fill this process's memory.
  const keep = (c: Buffer): void => void (out = (out + c.toString()).slice(-20_000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const p = { name, child, output: () => out };
  procs.push(p);
  return p;
}

async function stopAll(): Promise<void> {
  await Promise.all(
    procs.map(async (p) => {
      if (p.child.exitCode !== null || p.child.signalCode !== null) return;
      p.child.kill('SIGTERM');
      const timer = setTimeout(() => p.child.kill('SIGKILL'), 10_000);
      await once(p.child, 'exit');
      clearTimeout(timer);
    }),
  );
}

async function ready(p: Proc, probe: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  await waitFor(
    async () => {
      if (p.child.exitCode !== null) throw new Error(`${p.name} exited (${p.child.exitCode}):\n${p.output()}`);
      return probe().catch(() => false);
    },
    timeoutMs,
    100,
  ).catch((err: unknown) => {
    throw new Error(`${p.name} did not become ready: ${String(err)}\n${p.output()}`);
  });
}

async function startUpstream(): Promise<{ url: string; pid: number }> {
  const port = await freePort();
  const p = launch('fake upstream', ['-r', 'ts-node/register/transpile-only', 'tools/dev/fake-upstream.ts'], {
    ...process.env,
    TS_NODE_PROJECT: 'tsconfig.json',
    FAKE_UPSTREAM_PORT: String(port),
    FAKE_UPSTREAM_API_KEY: UPSTREAM_KEY,
  });
  const url = `http://127.0.0.1:${port}/v1`;
  await ready(p, async () => (await fetch(`${url}/models`, { headers: { authorization: `Bearer ${UPSTREAM_KEY}` } })).ok);
  return { url, pid: p.child.pid! };
}

/** A billable tenant (standard plan, `enterprise` for core, credit that will not run out) and its OAuth client. */
async function seedTenant(te: TestEnvironment): Promise<void> {
  const db = new pg.Client({ connectionString: te.db.url });
  await db.connect();
  try {
    await db.query(`INSERT INTO tenants (id, name, primary_email, plan) VALUES ($1, 'Bench Co', 'bench@example.test', 'standard')`, [TENANT_ID]);
    await db.query(`INSERT INTO entitlements (tenant_id, product_key, tier) VALUES ($1, 'core', 'enterprise')`, [TENANT_ID]);
    await db.query(`INSERT INTO credit_balances (tenant_id, balance) VALUES ($1, $2)`, [TENANT_ID, 1e15]);
    await db.query(`INSERT INTO oauth_clients (tenant_id, client_id, name, secret_hash, scopes) VALUES ($1, $2, 'bench', $3, $4)`, [
      TENANT_ID,
      CLIENT_ID,
      await hashSecret(CLIENT_SECRET),
      ['ai:invoke'],
    ]);
  } finally {
    await db.end();
  }
}

/** management-api, only to issue the access token the way clients get one. */
async function accessToken(te: TestEnvironment, issuer: string, port: number): Promise<string> {
  const p = launch('management-api', [mainOf('management-api')], {
    ...te.env,
    NODE_ENV: 'development',
    IDP_MODE: 'dev',
    LOG_LEVEL: 'warn',
    PORT: String(port),
    PUBLIC_BASE_URL: issuer,
    OAUTH_ISSUER: issuer,
  });
  await ready(p, async () => (await fetch(`${issuer}/healthz`)).ok);
  const res = await fetch(`${issuer}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT_ID, client_secret: CLIENT_SECRET }).toString(),
  });
  if (!res.ok) throw new Error(`/oauth/token answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { access_token: string }).access_token;
}

function withPgOptions(url: string, options: string): string {
  const u = new URL(url);
  u.searchParams.set('options', options);
  return u.toString();
}

/** "K=V K2=V2" as an environment. */
const envOf = (kvs: string | undefined): NodeJS.ProcessEnv =>
  Object.fromEntries((kvs ?? '').split(' ').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));

async function startGateway(
  te: TestEnvironment,
  issuer: string,
  upstream: string,
  main = mainOf('ai-gateway'),
  extraEnv: NodeJS.ProcessEnv = envOf(process.env['BENCH_GATEWAY_ENV']),
): Promise<{ url: string; pid: number }> {
  const port = await freePort();
  const metricsPort = await freePort();
  // BENCH_NODE_ARGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", profiles the gateway under load.
  const nodeArgs = (process.env['BENCH_NODE_ARGS'] ?? '').split(' ').filter(Boolean);
  const p = launch('ai-gateway', [...nodeArgs, main], {
    ...te.env,
    // BENCH_GATEWAY_DB_OPTIONS, e.g. "-c synchronous_commit=off", compares Postgres settings.
    ...(process.env['BENCH_GATEWAY_DB_OPTIONS'] ? { DATABASE_URL: withPgOptions(te.env['DATABASE_URL']!, process.env['BENCH_GATEWAY_DB_OPTIONS']) } : {}),
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    PORT: String(port),
    METRICS_PORT: String(metricsPort),
    DATABASE_POOL_SIZE: '10',
    OAUTH_ISSUER: issuer,
    PROVIDER_INHOUSE_URL: upstream,
    PROVIDER_INHOUSE_API_KEY: UPSTREAM_KEY,
    // Rate limits are checked (Redis) but must not refuse the load.
    GATEWAY_RATE_LIMIT_RPM: String(1e9),
    GATEWAY_RATE_LIMIT_TPM: String(1e12),
    GATEWAY_TENANT_RATE_LIMIT_RPM: `free=${1e9},standard=${1e9},premium=${1e9}`,
    // BENCH_GATEWAY_ENV, e.g. "GATEWAY_SETTLE_GATHER_MS=0 GATEWAY_LEDGER_SYNCHRONOUS_COMMIT=on", compares settings.
    ...extraEnv,
  });
  const url = `http://127.0.0.1:${port}`;
  await ready(p, async () => (await fetch(`${url}/readyz`)).ok);
  // What Kubernetes and Prometheus do to every pod. A build from before METRICS_PORT (an A/B baseline) serves /metrics on its one port.
  await (await fetch(`${url}/healthz`)).text();
  await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`).catch(() => fetch(`${url}/metrics`))).text();
  return { url, pid: p.child.pid! };
}

async function startPortkey(): Promise<{ url: string; pid: number }> {
  const port = await freePort();
  const bin = join(root, 'node_modules/@portkey-ai/gateway/build/start-server.js');
  const p = launch('portkey', [bin, `--port=${port}`, '--headless'], { ...process.env, NODE_ENV: 'production' });
  const url = `http://127.0.0.1:${port}`;
  await ready(p, async () => (await fetch(url)).ok);
  return { url, pid: p.child.pid! };
}

// ---- load --------------------------------------------------------------------------------------

interface Case {
  name: string;
  url: string;
  headers: Record<string, string>;
  /** The process serving the case (the upstream for direct calls): its CPU time per request is steadier than req/s on a shared machine. */
  pid: number;
  cpuUs: number[];
  /** The same, at the fixed rate. */
  cpuFixedUs: number[];
  max: number[];
  p50: number[];
  p99: number[];
  failures: number;
}

/** One request first: a case that does not answer 200 with the echo is a broken setup, not a figure. */
async function check(c: Case): Promise<void> {
  const res = await fetch(c.url, { method: 'POST', headers: c.headers, body: BODY });
  const text = await res.text();
  if (res.status !== 200 || !text.includes('echo: hello from the gateway benchmark')) {
    throw new Error(`${c.name}: a first request answered ${res.status}: ${text.slice(0, 500)}`);
  }
}

const opts = (c: Case, seconds: number) => ({ url: c.url, method: 'POST' as const, headers: c.headers, body: BODY, duration: seconds });

/** CPU time (user + system) a process has used so far, in seconds (Linux: /proc, 100 ticks a second). */
function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

async function maxThroughput(c: Case, seconds: number): Promise<number> {
  const before = cpuSeconds(c.pid);
  const r = await autocannon({ ...opts(c, seconds), connections: CONNECTIONS });
  c.failures += r.errors + r.timeouts + r.non2xx;
  c.cpuUs.push(((cpuSeconds(c.pid) - before) * 1e6) / Math.max(1, r.requests.total));
  return r.requests.average;
}

/**
 * p50 and p99 in ms (microsecond precision) at a fixed request rate, open loop and evenly spaced: a
 * request starts every 1000/FIXED_RATE ms on a keep-alive pool of FIXED_CONNECTIONS, whether or not
 * earlier ones have answered, and each is timed from when it was due (so a stall is not hidden by the
 * requests it delayed). autocannon's `overallRate` was used first: it sends each connection's share
 * of a second back to back at the start of the second, so 200 req/s arrived as bursts of 16 at once,
 * and the figure measured queueing in the burst, not the work per request.
 */
async function fixedRate(c: Case, seconds: number): Promise<{ p50: number; p99: number }> {
  const url = new URL(c.url);
  const pool = new Pool(url.origin, { connections: FIXED_CONNECTIONS, keepAliveTimeout: 30_000 });
  const times: number[] = [];
  const pending: Array<Promise<void>> = [];
  const intervalNs = 1e9 / FIXED_RATE;
  const total = Math.round(seconds * FIXED_RATE);
  const t0 = process.hrtime.bigint();
  const cpuBefore = cpuSeconds(c.pid);
  try {
    for (let i = 0; i < total; i++) {
      const due = t0 + BigInt(Math.round(i * intervalNs));
      const wait = Number(due - process.hrtime.bigint()) / 1e6;
      if (wait > 1) await new Promise((r) => setTimeout(r, wait - 0.5));
      while (process.hrtime.bigint() < due) await new Promise((r) => setImmediate(r));
      pending.push(
        pool.request({ path: url.pathname, method: 'POST', headers: c.headers, body: BODY }).then(
          async (res) => {
            await res.body.arrayBuffer();
            if (res.statusCode >= 200 && res.statusCode < 300) times.push(Number(process.hrtime.bigint() - due) / 1e6);
            else c.failures++;
          },
          () => void c.failures++,
        ),
      );
    }
    await Promise.all(pending);
    c.cpuFixedUs.push(((cpuSeconds(c.pid) - cpuBefore) * 1e6) / total);
  } finally {
    await pool.close();
  }
  times.sort((a, b) => a - b);
  const at = (p: number): number => times[Math.min(times.length - 1, Math.floor(p * times.length))] ?? NaN;
  return { p50: at(0.5), p99: at(0.99) };
}

/** The gateway's own account of its time (`x-gateway-overhead-ms`), over sequential requests. */
async function gatewayOverhead(c: Case): Promise<{ p50: number; p99: number } | undefined> {
  const values: number[] = [];
  for (let i = 0; i < 200; i++) {
    const res = await fetch(c.url, { method: 'POST', headers: c.headers, body: BODY });
    await res.arrayBuffer();
    const v = Number(res.headers.get('x-gateway-overhead-ms'));
    if (res.ok && Number.isFinite(v)) values.push(v);
  }
  if (values.length === 0) return undefined;
  values.sort((a, b) => a - b);
  return { p50: values[Math.floor(values.length / 2)]!, p99: values[Math.min(values.length - 1, Math.floor(values.length * 0.99))]! };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

async function main(): Promise<void> {
  // A runaway run (a hung server) must not hold the machine: everything stops after this long.
  const budgetMs = (CASES.length * ROUNDS * 2 * SECONDS + CASES.length * 2 * WARMUP_SECONDS + 180) * 1000;
  const watchdog = setTimeout(() => {
    console.error(`the benchmark took longer than ${Math.round(budgetMs / 1000)} s; stopping`);
    void stopAll().finally(() => process.exit(2));
  }, budgetMs);
  watchdog.unref();

  let te: TestEnvironment | undefined;
  const cases: Case[] = [];
  let ledger = '';
  let overhead: { p50: number; p99: number } | undefined;
  let ours: Case | undefined;
  try {
    const { url: upstream, pid: upstreamPid } = await startUpstream();
    const make = (name: string, url: string, pid: number, headers: Record<string, string>): Case => ({
      name,
      url,
      pid,
      cpuUs: [],
      cpuFixedUs: [],
      headers: { 'content-type': 'application/json', ...headers },
      max: [],
      p50: [],
      p99: [],
      failures: 0,
    });
    if (CASES.includes('direct')) cases.push(make('direct to the upstream', `${upstream}/chat/completions`, upstreamPid, { authorization: `Bearer ${UPSTREAM_KEY}` }));
    if (CASES.includes('gateway')) {
      te = await createTestEnvironment();
      await seedTenant(te);
      const mgmtPort = await freePort();
      const issuer = `http://127.0.0.1:${mgmtPort}`;
      const token = await accessToken(te, issuer, mgmtPort);
      const gw = await startGateway(te, issuer, upstream);
      ours = make('through our gateway (full pipeline)', `${gw.url}/v1/chat/completions`, gw.pid, { authorization: `Bearer ${token}`, 'x-service-product-key': 'core' });
      cases.push(ours);
      if (process.env['BENCH_BASELINE_MAIN'] || process.env['BENCH_BASELINE_ENV']) {
        const base = await startGateway(te, issuer, upstream, process.env['BENCH_BASELINE_MAIN'] || undefined, envOf(process.env['BENCH_BASELINE_ENV']));
        cases.push(make('baseline gateway', `${base.url}/v1/chat/completions`, base.pid, { authorization: `Bearer ${token}`, 'x-service-product-key': 'core' }));
      }
    }
    if (CASES.includes('portkey')) {
      const portkey = await startPortkey();
      cases.push(
        make('through Portkey 1.x (plain proxy)', `${portkey.url}/v1/chat/completions`, portkey.pid, {
          authorization: `Bearer ${UPSTREAM_KEY}`,
          'x-portkey-provider': 'openai',
          'x-portkey-custom-host': upstream,
        }),
      );
    }
    for (const c of cases) await check(c);
    for (const c of cases) await maxThroughput(c, WARMUP_SECONDS);
    for (const c of cases) {
      c.failures = 0;
      c.cpuUs = [];
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const c of cases) c.max.push(await maxThroughput(c, SECONDS));
      for (const c of cases) {
        const f = await fixedRate(c, SECONDS);
        c.p50.push(f.p50);
        c.p99.push(f.p99);
      }
    }
    if (ours) overhead = await gatewayOverhead(ours);
    if (te) {
      const db = new pg.Client({ connectionString: te.db.url });
      await db.connect();
      // Requests still settling when the load stopped.
      await waitFor(async () => (await db.query(`SELECT 1 FROM usage_ledger WHERE status = 'pending' LIMIT 1`)).rowCount === 0, 10_000, 100).catch(() => undefined);
      const { rows } = await db.query(
        `SELECT status, count(*)::int AS n, sum(debit)::text AS debit FROM usage_ledger WHERE tenant_id = $1 GROUP BY status ORDER BY status`,
        [TENANT_ID],
      );
      const [bal] = (await db.query(`SELECT (1e15 - balance)::text AS fell, reserved::text FROM credit_balances WHERE tenant_id = $1`, [TENANT_ID])).rows;
      await db.end();
      ledger =
        `gateway ledger: ${rows.map((r: { status: string; n: number; debit: string }) => `${r.n} ${r.status} (debits ${r.debit})`).join(', ')}; ` +
        `balance fell by ${bal?.fell}, still reserved ${bal?.reserved} ` +
        `(failed rows: requests autocannon cut off when a measurement ended)`;
    }
  } finally {
    await stopAll();
    await te?.teardown();
    clearTimeout(watchdog);
  }

  const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
  const ms = (n: number): string => n.toFixed(2);
  console.log(
    `node ${process.version}, loopback, fake upstream 0 ms; max: ${CONNECTIONS} connections; fixed: ${FIXED_RATE} req/s over ${FIXED_CONNECTIONS} connections; ` +
      `${SECONDS} s per measurement x ${ROUNDS} interleaved rounds (median shown) after ${WARMUP_SECONDS} s warm-up\n`,
  );
  console.log(
    `${'case'.padEnd(38)} ${'max req/s'.padStart(10)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'CPU µs/req'.padStart(11)} ${'at 200/s'.padStart(9)} ${'failed'.padStart(7)}   rounds max req/s`,
  );
  for (const c of cases) {
    console.log(
      `${c.name.padEnd(38)} ${fmt(median(c.max)).padStart(10)} ${ms(median(c.p50)).padStart(8)} ${ms(median(c.p99)).padStart(8)} ` +
        `${Math.min(...c.cpuUs).toFixed(0).padStart(11)} ${median(c.cpuFixedUs).toFixed(0).padStart(9)} ${String(c.failures).padStart(7)}   ${c.max.map(fmt).join(' / ')}`,
    );
  }
  console.log('(CPU µs/req: the serving process only (direct: the upstream itself); at 32 connections the lowest round, at 200/s the median)');
  if (ledger) console.log(`\n${ledger}`);
  if (overhead) console.log(`x-gateway-overhead-ms (the gateway's own time, 200 sequential requests): p50 ${ms(overhead.p50)}, p99 ${ms(overhead.p99)}`);
  const direct = cases.find((c) => c.name.startsWith('direct'));
  const portkey = cases.find((c) => c.name.includes('Portkey'));
  const verdicts: string[] = [];
  if (direct && ours) {
    const addedP50 = median(ours.p50) - median(direct.p50);
    const addedP99 = median(ours.p99) - median(direct.p99);
    verdicts.push(`added p50 ${ms(addedP50)} ms (<= 1: ${addedP50 <= 1 ? 'met' : 'NOT met'})`);
    verdicts.push(`added p99 ${ms(addedP99)} ms (<= 5: ${addedP99 <= 5 ? 'met' : 'NOT met'})`);
  }
  if (ours && portkey) {
    const ratio = median(ours.max) / median(portkey.max);
    verdicts.push(`throughput ours/Portkey ${ratio.toFixed(1)}x (>= 5: ${ratio >= 5 ? 'met' : 'NOT met'})`);
  }
  if (portkey && direct) verdicts.push(`Portkey added p50 ${ms(median(portkey.p50) - median(direct.p50))} ms`);
  if (verdicts.length > 0) console.log(`\ntargets at ${FIXED_RATE} req/s: ${verdicts.join('; ')}`);
  if (cases.some((c) => c.failures > 0)) {
    console.log('\nSOME REQUESTS FAILED (non-2xx, errors or time-outs): the figures above are not valid');
    process.exitCode = 1;
  }
}

main().catch(async (err: unknown) => {
  console.error(err);
  await stopAll();
  process.exit(1);
});
