/**
 * The management API's evaluate endpoint under load, against the built app started as a process
 * (as `npm start` runs it), on loopback with real Postgres and Redis.
 *
 *   npm run build && TS_NODE_PROJECT=tsconfig.json node -r ts-node/register/transpile-only \
 *     -r tsconfig-paths/register tools/bench/evaluate-endpoint.ts [seconds] [connections]
 *
 * In one run: a baseline (GET /healthz of the same process: Nest + Express + every global
 * middleware, no auth, no evaluation), then POST /api/flags/{key}/evaluate of a flag with 20
 * rules (the matching one last, so all are scanned), authenticated by a user ID token and
 * resolved through the tenant guard, the rate limiter and the compiled-snapshot cache.
 * Prints requests/s and latency percentiles of both and the ratio. Bounded in time.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { createTestEnvironment, freePort, http, waitFor } from '@flagship/testing';

const SECONDS = Number(process.argv[2] ?? 10);
const CONNECTIONS = Number(process.argv[3] ?? 64);
const root = join(__dirname, '..', '..');

async function run(opts: autocannon.Options): Promise<autocannon.Result> {
  return autocannon({ duration: SECONDS, connections: CONNECTIONS, pipelining: 1, ...opts });
}

function line(name: string, r: autocannon.Result): string {
  return `${name.padEnd(28)} ${String(Math.round(r.requests.average)).padStart(8)} req/s   p50 ${String(r.latency.p50).padStart(4)} ms   p99 ${String(r.latency.p99).padStart(4)} ms   non-2xx ${r.non2xx}   errors ${r.errors}`;
}

async function main(): Promise<void> {
  const te = await createTestEnvironment();
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  // BENCH_NODE_ARGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", profiles the app under load.
  const nodeArgs = (process.env['BENCH_NODE_ARGS'] ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, join(root, 'dist/apps/management-api/apps/management-api/src/main.js')], {
    env: {
      ...te.env,
      // The dev identity provider signs the bench user in; it is refused under NODE_ENV=production.
      NODE_ENV: 'development',
      IDP_MODE: 'dev',
      LOG_LEVEL: 'warn',
      PORT: String(port),
      PUBLIC_BASE_URL: base,
      RATE_LIMIT_FREE: '100000000',
      RATE_LIMIT_IP_PER_MINUTE: '100000000',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  try {
    await waitFor(async () => (await http(`${base}/healthz`)).status === 200, 20000, 100);
    const email = 'bench@flagship.test';
    const { idToken } = (await http(`${base}/dev/idp/accounts`, { method: 'POST', json: { email, password: 'bench-password' } })).body;
    const signup = await http(`${base}/api/v1/auth/signup`, { method: 'POST', json: { idToken, email, password: 'bench-password' } });
    const tenantId: string = signup.body.data.canonical_tenant_id;
    const headers = { authorization: `Bearer ${idToken}`, 'x-tenant-id': tenantId, 'content-type': 'application/json' };
    const flag = await http(`${base}/api/flags`, { method: 'POST', headers, json: { key: 'bench-20-rules', name: 'bench', type: 'boolean', defaultValue: false, enabled: true } });
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
    const patched = await http(`${base}/api/flags/bench-20-rules`, { method: 'PATCH', headers, json: { rules } });
    if (patched.status !== 200) throw new Error(`patch failed: ${patched.status} ${patched.text}`);
    const body = JSON.stringify({ userId: 'user-42', attributes: { country: 'NO', email: 'u@example.com' } });
    const check = await http(`${base}/api/flags/bench-20-rules/evaluate`, { method: 'POST', headers, body });
    if (check.body.reason !== 'RULE_MATCH' || check.body.ruleId !== 'r19') throw new Error(`unexpected evaluation: ${check.text}`);

    await run({ url: `${base}/healthz`, duration: 2 }); // warm-up
    const baseline = await run({ url: `${base}/healthz` });
    await run({ url: `${base}/api/flags/bench-20-rules/evaluate`, method: 'POST', headers, body, duration: 2 });
    const evaluate = await run({ url: `${base}/api/flags/bench-20-rules/evaluate`, method: 'POST', headers, body });
    console.log(`\nmanagement-api evaluate endpoint, ${CONNECTIONS} connections, ${SECONDS} s each, loopback`);
    console.log(line('baseline GET /healthz', baseline));
    console.log(line('evaluate (20 rules)', evaluate));
    console.log(`ratio evaluate/baseline: ${(evaluate.requests.average / baseline.requests.average).toFixed(2)}`);
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    await te.teardown();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
