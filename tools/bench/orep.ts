/**
 * Load test of the built orep-server against a bare node:http baseline, in one run, one process tree.
 *
 *   npx nx run orep-server:build --output-style=static
 *   TS_NODE_PROJECT=tsconfig.json node -r ts-node/register/transpile-only -r tsconfig-paths/register \
 *     tools/bench/orep.ts [secondsPerCase=10] [rounds=3]
 *
 * Cases, each run the same way (autocannon in this process, 64 connections, fixed duration, on
 * loopback, after a warm-up; servers are child processes started one at a time so none competes
 * with another for a core):
 *   baseline   a bare node:http server answering a fixed 100-byte JSON to the same POST
 *   reference  node:http reading and parsing the body before answering (not a target: what any JSON
 *              endpoint does at least, to tell that cost from orep-server's own)
 *   orep       OFREP single evaluation of a flag with 20 rules (all scanned), file mode, 10 flags
 *   orep-seed  the same flag through POST /v1/flags/{key}/evaluate
 *   orep-100k  the OFREP case again with 100,000 flags loaded
 * orep-server gets GET /healthz and /metrics (on its internal METRICS_PORT) before its load, as
 * Kubernetes probes and Prometheus would: they go through Nest, and whatever they switch on (async
 * hooks, say) shows in the figures.
 * Plus the 100,000-flag load: time to load (as the server reports it, and from spawn to ready) and
 * resident memory once loaded.
 *
 * Targets (issue 5): orep >= 0.8 x baseline throughput, p99 <= 5 ms; 100,000 flags load <= 2 s and
 * RSS <= 300 MB; throughput with 100,000 flags not below that with 10.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import type { FlagDefinition, Rule, Variation } from '@flagship/flag-evaluation';
import { freePort, waitFor } from '@flagship/testing';

const SECONDS = Number(process.argv[2] ?? process.env.BENCH_SECONDS ?? 10);
const WARMUP_SECONDS = 3;
const ROUNDS = Number(process.argv[3] ?? process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = 64;
const TOKEN = 'bench-token';
const root = join(__dirname, '..', '..');
const orepMain = join(root, 'dist/apps/orep-server/apps/orep-server/src/main.js');

// ---- flags -------------------------------------------------------------------------------------

const onOff: Variation[] = [
  { id: 'on', name: 'On', value: true, weight: 0 },
  { id: 'off', name: 'Off', value: false, weight: 0 },
];

/** Twenty rules of mixed operators that the bench contexts never match: every one is evaluated. */
function twentyRules(): Rule[] {
  const rules: Rule[] = [];
  for (let i = 0; i < 20; i++) {
    switch (i % 5) {
      case 0:
        rules.push({ id: `r${i}`, clauses: [{ attribute: 'country', op: 'in', values: [`X${i}`, `Y${i}`, 'ZZ'] }], variationId: 'on' });
        break;
      case 1:
        rules.push({
          id: `r${i}`,
          clauses: [
            { attribute: 'plan', op: 'in', values: ['premium'] },
            { attribute: 'email', op: 'endsWith', values: [`@customer${i}.com`] },
          ],
          variationId: 'on',
        });
        break;
      case 2:
        rules.push({ id: `r${i}`, clauses: [{ attribute: 'email', op: 'startsWith', values: [`admin${i}@`] }], variationId: 'on' });
        break;
      case 3:
        rules.push({ id: `r${i}`, clauses: [{ attribute: 'appVersion', op: 'semVerGreaterThan', values: ['9.0.0'] }], variationId: 'on' });
        break;
      default:
        rules.push({
          id: `r${i}`,
          clauses: [
            { attribute: 'age', op: 'greaterThanOrEqual', values: [21] },
            { attribute: 'email', op: 'matches', values: [`^qa-${i}-[0-9]+@internal\\.test$`] },
          ],
          variationId: 'on',
        });
    }
  }
  return rules;
}

const benchFlag: FlagDefinition = {
  key: 'bench-20-rules',
  type: 'boolean',
  defaultValue: false,
  variations: onOff,
  enabled: true,
  targets: [{ variationId: 'on', values: ['vip-1', 'vip-2'] }],
  rules: twentyRules(),
  prerequisites: [],
};

/** Filler flags shaped like typical ones: a target list, one or two small rules, some rollouts. */
function fillerFlag(i: number): FlagDefinition {
  const flag: FlagDefinition = {
    key: `flag-${i}`,
    type: 'boolean',
    defaultValue: false,
    variations: i % 4 === 0 ? [{ ...onOff[0]!, weight: 10 }, { ...onOff[1]!, weight: 90 }] : onOff,
    enabled: i % 10 !== 0,
    targets: i % 3 === 0 ? [{ variationId: 'on', values: [`user-${i}`, `user-${i + 1}`] }] : [],
    rules: [{ id: 'a', clauses: [{ attribute: 'country', op: 'in', values: ['FR', 'DE'] }], variationId: 'on' }],
    prerequisites: [],
  };
  if (i % 2 === 0) flag.rules.push({ id: 'b', clauses: [{ attribute: 'email', op: 'endsWith', values: [`@corp${i % 100}.com`] }], variationId: 'off' });
  return flag;
}

function writeFlagFile(dir: string, name: string, count: number): string {
  const flags = [benchFlag];
  for (let i = 1; i < count; i++) flags.push(fillerFlag(i));
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify({ version: 1, environment: 'bench', flags }));
  return path;
}

// ---- servers -----------------------------------------------------------------------------------

interface Server {
  url: string;
  child: ChildProcess;
  output: () => string;
}

const BASELINE_BODY = JSON.stringify({ key: 'bench-20-rules', value: false, reason: 'DEFAULT', variant: 'off', note: 'x'.repeat(23) });

/** The bare node:http server: reads nothing, answers the same 100 bytes to every request. */
const BASELINE_SOURCE = `
const http = require('node:http');
const body = Buffer.from(${JSON.stringify(BASELINE_BODY)});
http.createServer((req, res) => {
  req.resume();
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
  res.end(body);
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

/**
 * A reference, not a target: the least any JSON endpoint on node:http does per request (read the
 * body, JSON.parse it, answer a JSON text built once), to show how much of the gap to the baseline
 * is that work alone rather than orep-server's.
 */
const FLOOR_SOURCE = `
const http = require('node:http');
const answer = ${JSON.stringify(BASELINE_BODY)};
http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let parsed = {};
    try { parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')); } catch {}
    const body = typeof parsed.context === 'object' ? answer : '{}';
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

/**
 * With taskset (Linux, 2+ cores), each server runs on core 1 and this process (autocannon) on core 0,
 * so that neither steals the other's core and rounds vary less; both cases get the same treatment.
 */
const PIN = (() => {
  try {
    execFileSync('taskset', ['-pc', '0', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

function launch(args: string[], env: NodeJS.ProcessEnv): Omit<Server, 'url'> {
  const [cmd, argv] = PIN ? ['taskset', ['-c', '1', process.execPath, ...args]] : [process.execPath, args];
  const child = spawn(cmd, argv, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (out += c));
  return { child, output: () => out };
}

async function startBaseline(source = BASELINE_SOURCE): Promise<Server> {
  const port = await freePort();
  const s = launch(['-e', source], { PORT: String(port) });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await fetch(url, { method: 'POST' })).ok, 10000, 50);
  return { ...s, url };
}

async function startOrep(flagsFile: string): Promise<Server & { readyAfterMs: number; details: any }> {
  const port = await freePort();
  const metricsPort = await freePort();
  const started = performance.now();
  const s = launch([orepMain], {
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    OREP_PORT: String(port),
    METRICS_PORT: String(metricsPort),
    OREP_AUTH_TOKEN: TOKEN,
    OREP_FLAGS_FILE: flagsFile,
  });
  const url = `http://127.0.0.1:${port}`;
  const details = await waitFor(
    async () => {
      if (s.child.exitCode !== null) throw new Error(`orep-server exited: ${s.output()}`);
      // The details (load time, flags) are on the internal port; the public one tells the status alone.
      const r = await fetch(`http://127.0.0.1:${metricsPort}/readyz`);
      return r.ok ? ((await r.json()) as any) : undefined;
    },
    60000,
    10,
  );
  const readyAfterMs = performance.now() - started;
  // What Kubernetes does to every pod before and while it takes traffic: these go through Nest.
  for (const probe of [`${url}/healthz`, `http://127.0.0.1:${metricsPort}/metrics`]) await (await fetch(probe)).text();
  return { ...s, url, readyAfterMs, details };
}

/** The server's own pid: the child itself, or the node process taskset execs into (same pid). */
const pidOf = (server: Server): number => server.child.pid!;

async function stop(server: Server): Promise<void> {
  if (server.child.exitCode !== null) return;
  server.child.kill('SIGTERM');
  await once(server.child, 'exit');
}

/** CPU time (user + system) a process has used so far, in seconds (Linux: /proc, 100 ticks a second). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Resident set size of a process, in MB (Linux). */
function rssMb(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

// ---- load --------------------------------------------------------------------------------------

interface Row {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  /** Server CPU time per answered request, in µs: throughput's inverse, without the machine's noise. */
  cpuUs: number;
}

// One fixed body per endpoint: the load generator shares the machine, so it must cost as little as
// possible per request. The 20 rules are all scanned whatever the context, and the server caches
// nothing per request body.
const context = { targetingKey: 'user-7919', country: 'FR', plan: 'premium', email: 'p7@example.com', appVersion: '2.1.0', age: 30 };
const OFREP_BODY = JSON.stringify({ context });
const SEED_BODY = JSON.stringify({ defaultValue: false, type: 'boolean', context });

async function load(name: string, url: string, body: string, seconds: number, pid: number): Promise<Row> {
  const cpuBefore = cpuSeconds(pid);
  const result = await autocannon({
    url,
    method: 'POST',
    connections: CONNECTIONS,
    duration: seconds,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
    body,
  });
  return {
    name,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    cpuUs: ((cpuSeconds(pid) - cpuBefore) * 1e6) / Math.max(1, result.requests.total),
  };
}

/** Median by throughput of the rounds, so one round disturbed by other work on the machine does not decide. */
function median(rows: Row[]): Row {
  const sorted = [...rows].sort((a, b) => a.rps - b.rps);
  return sorted[Math.floor(sorted.length / 2)]!;
}

interface Case {
  name: string;
  url: string;
  body: string;
  pid: number;
  rounds: Row[];
}

/** Warms every case up, then runs them in turn, ROUNDS times, so drift in machine load hits all alike. */
async function runInterleaved(cases: Case[]): Promise<void> {
  for (const c of cases) await load(c.name, c.url, c.body, WARMUP_SECONDS, c.pid);
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of cases) c.rounds.push(await load(c.name, c.url, c.body, SECONDS, c.pid));
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'orep-bench-'));
  const notes: string[] = [];
  const servers: Server[] = [];
  let cases: Case[] = [];
  try {
    const small = writeFlagFile(dir, 'flags-10.json', 10);
    const largeFile = writeFlagFile(dir, 'flags-100k.json', 100_000);

    // Idle servers cost no CPU, so both stay up and the cases alternate between them.
    const baseline = await startBaseline();
    servers.push(baseline);
    const floor = await startBaseline(FLOOR_SOURCE);
    servers.push(floor);
    const orep = await startOrep(small);
    servers.push(orep);
    cases = [
      { name: 'baseline node:http, fixed 100-byte JSON', url: baseline.url, body: OFREP_BODY, pid: pidOf(baseline), rounds: [] },
      { name: 'reference: node:http + read + JSON.parse', url: floor.url, body: OFREP_BODY, pid: pidOf(floor), rounds: [] },
      { name: 'orep OFREP, 20-rule flag, 10 flags', url: `${orep.url}/ofrep/v1/evaluate/flags/bench-20-rules`, body: OFREP_BODY, pid: pidOf(orep), rounds: [] },
      { name: 'orep seed endpoint, same flag', url: `${orep.url}/v1/flags/bench-20-rules/evaluate`, body: SEED_BODY, pid: pidOf(orep), rounds: [] },
    ];
    await runInterleaved(cases);
    await stop(orep);

    const big = await startOrep(largeFile);
    servers.push(big);
    const atReady = rssMb(pidOf(big));
    await new Promise((r) => setTimeout(r, 3000));
    const settled = rssMb(pidOf(big));
    const snapshot = big.details.details.snapshot;
    notes.push(
      `100,000 flags (${(readFileSync(largeFile).length / 1e6).toFixed(1)} MB file): loaded in ${snapshot.lastFullLoadMs} ms ` +
        `(read, parse, validate; the server's own figure), ready ${Math.round(big.readyAfterMs)} ms after spawn ` +
        `(includes Node and Nest start-up); RSS at ready ${atReady.rss.toFixed(0)} MB, 3 s later ${settled.rss.toFixed(0)} MB, ` +
        `peak during the load ${settled.peak.toFixed(0)} MB`,
    );
    const large: Case = { name: 'orep OFREP, 20-rule flag, 100,000 flags', url: `${big.url}/ofrep/v1/evaluate/flags/bench-20-rules`, body: OFREP_BODY, pid: pidOf(big), rounds: [] };
    // Against the same baseline again, in the same interleaved way.
    const again: Case = { ...cases[2]!, rounds: [] };
    const orepAgain = await startOrep(small);
    servers.push(orepAgain);
    again.url = `${orepAgain.url}/ofrep/v1/evaluate/flags/bench-20-rules`;
    again.pid = pidOf(orepAgain);
    await runInterleaved([again, large]);
    notes.push(`RSS after the 100,000-flag load test: ${rssMb(pidOf(big)).rss.toFixed(0)} MB`);
    cases.push({ ...again, name: 'orep OFREP, 20-rule flag, 10 flags (2nd run)' }, large);
  } finally {
    for (const s of servers) await stop(s);
    rmSync(dir, { recursive: true, force: true });
  }

  const rows = cases.map((c) => ({ ...median(c.rounds), name: c.name }));
  const base = rows[0]!.rps;
  const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
  console.log(
    `node ${process.version}, autocannon ${CONNECTIONS} connections, ${SECONDS} s per case x ${ROUNDS} interleaved rounds ` +
      `(median shown; CPU µs/req: the lowest round) after ${WARMUP_SECONDS} s warm-up, loopback, ` +
      `${PIN ? 'servers pinned to core 1 and autocannon to core 0' : 'no core pinning (taskset unavailable)'}\n`,
  );
  console.log(
    `${'case'.padEnd(46)} ${'req/s'.padStart(9)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'vs base'.padStart(8)} ` +
      `${'CPU µs/req'.padStart(11)} ${'errors'.padStart(7)} ${'non-2xx'.padStart(8)}   rounds req/s`,
  );
  cases.forEach((c, i) => {
    const r = rows[i]!;
    console.log(
      `${r.name.padEnd(46)} ${fmt(r.rps).padStart(9)} ${String(r.p50).padStart(7)} ${String(r.p99).padStart(7)} ${(r.rps / base).toFixed(2).padStart(8)} ` +
        `${Math.min(...c.rounds.map((x) => x.cpuUs)).toFixed(1).padStart(11)} ${String(r.errors).padStart(7)} ${String(r.non2xx).padStart(8)}   ${c.rounds.map((x) => fmt(x.rps)).join(' / ')}`,
    );
  });
  const ratios = cases[2]!.rounds.map((r, i) => (r.rps / cases[0]!.rounds[i]!.rps).toFixed(2));
  console.log(`\nper-round orep/baseline: ${ratios.join(' / ')}`);
  for (const n of notes) console.log(n);
  const orep10 = rows[2]!;
  const orep10b = rows[4]!;
  const orep100k = rows[5]!;
  console.log(
    `\ntargets: orep/baseline ${(orep10.rps / base).toFixed(2)} (>= 0.80: ${orep10.rps / base >= 0.8 ? 'met' : 'NOT met'}); ` +
      `p99 ${orep10.p99} ms (<= 5: ${orep10.p99 <= 5 ? 'met' : 'NOT met'}); ` +
      `100,000 vs 10 flags ${(orep100k.rps / orep10b.rps).toFixed(2)} (>= ~1: ${orep100k.rps >= 0.95 * orep10b.rps ? 'met' : 'NOT met'})`,
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
