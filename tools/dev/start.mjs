// `npm start`: install what is missing, build, migrate, seed the demo tenant, start every app,
// print their addresses, and stop them all on Ctrl-C.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { APPS, entry } from './apps.mjs';
import { secretLines } from './dev-secrets.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
process.chdir(root);

function run(cmd, args, env = process.env) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', env });
  if (r.status !== 0) {
    console.error(`\`${cmd} ${args.join(' ')}\` failed (exit ${r.status ?? r.signal})`);
    process.exit(1);
  }
}

if (!existsSync('node_modules/.package-lock.json')) run('bash', ['tools/dev/install.sh']);
run(process.execPath, ['tools/dev/check-services.mjs']);
run(process.execPath, ['tools/dev/ensure-database.mjs']);
run('npx', ['nx', 'run-many', '-t', 'build', '--output-style=static'], { ...process.env, NX_DAEMON: 'false' });
run(process.execPath, [entry('management-api', 'migrate')]);
// The seed's last line carries the demo OAuth client's id and its secret, new at every seed.
const seeded = spawnSync(process.execPath, [entry('management-api', 'seed')], { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
const demoClient = /^demo-oauth-client (\S+) (\S+)$/m.exec(seeded.stdout ?? '');
process.stdout.write((seeded.stdout ?? '').replace(/^demo-oauth-client .*\n?/m, ''));
if (seeded.status !== 0 || !demoClient) {
  console.error(`the seed failed (exit ${seeded.status ?? seeded.signal})`);
  process.exit(1);
}

const env = {
  NODE_ENV: 'development',
  // The remote evaluation server needs a token; this one is for local use only. It serves the
  // example flag file, watched: edit it and the server reloads.
  OREP_AUTH_TOKEN: 'dev-orep-token',
  // A browser key: it evaluates only the example flags marked available to browsers.
  OREP_CLIENT_KEYS: 'pk_dev_browser_key_0001',
  OREP_FLAGS_FILE: 'apps/orep-server/flags.example.json',
  // Webhooks may call a receiver on this machine (http, loopback); never in production.
  WEBHOOKS_ALLOW_PRIVATE_URLS: 'true',
  ...process.env,
};

const children = [];
let stopping = false;
function stop(code = 0) {
  if (stopping) return;
  stopping = true;
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
  Promise.all(children.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : null))).then(() => process.exit(code));
  setTimeout(() => process.exit(code), 15000).unref();
}
process.on('SIGINT', () => stop(0));
process.on('SIGTERM', () => stop(0));
// `npm start` under `timeout` or a supervisor: npm exits on SIGTERM without passing it on, which
// would leave this script and every app running, re-parented. Seeing the parent change is the cue.
const parentPid = process.ppid;
setInterval(() => {
  if (process.ppid !== parentPid) stop(0);
}, 500).unref();

const LEVELS = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO ', 40: 'WARN ', 50: 'ERROR', 60: 'FATAL' };
const QUIET_FIELDS = new Set(['level', 'time', 'pid', 'hostname', 'name', 'msg', 'context', 'req', 'res', 'responseTime', 'err']);

/**
 * One log line as a person reads it in a terminal: the apps log JSON (pino, for machines in
 * production), shown here as `12:00:01.234 INFO  [management-api] Context: message key=value`, a
 * request as `POST /oauth/token -> 200 (113 ms)`, an error with its stack. Lines that are not JSON
 * pass through as they are. `LOG_FORMAT=json npm start` keeps the raw JSON.
 */
function readable(name, line) {
  if (env.LOG_FORMAT === 'json' || !line.startsWith('{')) return `[${name}] ${line}`;
  let o;
  try {
    o = JSON.parse(line);
  } catch {
    return `[${name}] ${line}`;
  }
  if (typeof o !== 'object' || o === null || !('level' in o)) return `[${name}] ${line}`;
  const time = new Date(o.time ?? Date.now()).toISOString().slice(11, 23);
  let text = o.msg ?? '';
  if (o.req && o.res) text = `${o.req.method} ${o.req.url} -> ${o.res.statusCode} (${o.responseTime} ms)${o.req.id ? ` id=${o.req.id}` : ''}`;
  const extras = Object.entries(o)
    .filter(([k]) => !QUIET_FIELDS.has(k))
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  const err = o.err ? `\n    ${String(o.err.stack ?? o.err.message ?? JSON.stringify(o.err)).replace(/\n/g, '\n    ')}` : '';
  return `${time} ${LEVELS[o.level] ?? o.level} [${name}] ${o.context ? `${o.context}: ` : ''}${text}${extras ? `  ${extras}` : ''}${err}`;
}

/** Starts a process whose output lines are prefixed with its name; when one dies, all stop. */
function launch(name, args, { extraEnv = {}, onLine = () => {} } = {}) {
  const child = spawn(process.execPath, args, { env: { ...env, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
  for (const stream of [child.stdout, child.stderr]) {
    let rest = '';
    stream.on('data', (chunk) => {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop();
      for (const line of lines) {
        process.stdout.write(`${readable(name, line)}\n`);
        onLine(line);
      }
    });
  }
  child.on('exit', (code, signal) => {
    if (!stopping) {
      console.error(`[${name}] exited (${code ?? signal}); stopping the others`);
      stop(1);
    }
  });
  return child;
}

// No model server configured: the gateway's `inhouse` provider is the fake OpenAI-compatible upstream
// of libs/testing (echo answers, deterministic token counts), so a first call works out of the box.
let fakeUpstream;
if (!env.PROVIDER_INHOUSE_URL) {
  const port = env.FAKE_UPSTREAM_PORT ?? '3010';
  const apiKey = env.PROVIDER_INHOUSE_API_KEY || 'dev-inhouse-key';
  const marker = 'fake model upstream listening on ';
  let ready;
  const listening = new Promise((resolve) => (ready = resolve));
  children.push(
    launch('fake-upstream', ['-r', 'ts-node/register/transpile-only', 'tools/dev/fake-upstream.ts'], {
      extraEnv: { TS_NODE_PROJECT: 'tsconfig.json', FAKE_UPSTREAM_PORT: port, FAKE_UPSTREAM_API_KEY: apiKey },
      onLine: (line) => line.startsWith(marker) && ready(line.slice(marker.length)),
    }),
  );
  fakeUpstream = await Promise.race([listening, new Promise((r) => setTimeout(() => r(undefined), 30000))]);
  if (!fakeUpstream) {
    console.error('the fake model upstream did not start within 30 s');
    stop(1);
    await new Promise(() => {});
  }
  Object.assign(env, { PROVIDER_INHOUSE_URL: fakeUpstream, PROVIDER_INHOUSE_API_KEY: apiKey });
}
// No Stripe configured: the fake Stripe of libs/testing, so checkout and portal links work locally
// (its pages at /checkout/... and /portal/... complete the flow and send webhooks to billing-worker).
// Its API key and webhook secret are made here, new each run, and handed to it and to the apps;
// neither is printed (the fake prints only its address and price ids).
let fakeStripe = false;
if (!env.STRIPE_SECRET_KEY) {
  const worker = APPS.find((a) => a.name === 'billing-worker');
  const keys = { STRIPE_SECRET_KEY: `sk_test_${randomBytes(18).toString('hex')}`, STRIPE_WEBHOOK_SECRET: `whsec_${randomBytes(24).toString('hex')}` };
  const marker = /^fake stripe settings (.*)$/;
  let ready;
  const settled = new Promise((resolve) => (ready = resolve));
  children.push(
    launch('fake-stripe', ['-r', 'ts-node/register/transpile-only', 'tools/dev/fake-stripe.ts'], {
      extraEnv: {
        TS_NODE_PROJECT: 'tsconfig.json',
        FAKE_STRIPE_PORT: env.FAKE_STRIPE_PORT ?? '12111',
        FAKE_STRIPE_WEBHOOK_URL: `http://127.0.0.1:${worker.port}/webhooks/stripe`,
        FAKE_STRIPE_API_KEY: keys.STRIPE_SECRET_KEY,
        FAKE_STRIPE_WEBHOOK_SECRET: keys.STRIPE_WEBHOOK_SECRET,
      },
      onLine: (line) => {
        const m = marker.exec(line);
        if (m) ready(JSON.parse(m[1]));
      },
    }),
  );
  const settings = await Promise.race([settled, new Promise((r) => setTimeout(() => r(undefined), 30000))]);
  if (!settings) {
    console.error('the fake Stripe did not start within 30 s');
    stop(1);
    await new Promise(() => {});
  }
  Object.assign(env, settings, keys);
  fakeStripe = true;
}
children.push(...APPS.map(({ name, metricsPort }) => launch(name, [entry(name)], { extraEnv: { METRICS_PORT: String(metricsPort) } })));

async function healthy(port) {
  for (let i = 0; i < 150; i++) {
    try {
      const r = await fetch(`http://127.0.0.1:${port}/healthz`);
      if (r.ok) return true;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

const results = await Promise.all(APPS.map(async (a) => [a, await healthy(a.port)]));
console.log('\nFlagship is running:');
for (const [a, ok] of results) console.log(`  ${a.name.padEnd(15)} http://127.0.0.1:${a.port}  metrics http://127.0.0.1:${a.metricsPort}/metrics${ok ? '' : '  (not healthy yet)'}`);
console.log(`  API docs        http://127.0.0.1:3000/docs`);
console.log(`  web console     http://127.0.0.1:3000/console/`);
console.log(`  inhouse model   ${fakeUpstream ? `${fakeUpstream}: the fake upstream (echo answers), as PROVIDER_INHOUSE_URL is unset` : env.PROVIDER_INHOUSE_URL}`);
console.log(`  demo client     id ${demoClient[1]}`);
console.log('                  (an OAuth client of the demo tenant: core enterprise, 10 credits; README "The AI gateway")');
const secrets = [
  ['orep token', 'OREP_AUTH_TOKEN', env.OREP_AUTH_TOKEN],
  ['demo client secret', 'DEMO_CLIENT_SECRET', demoClient[2]],
];
for (const line of secretLines(secrets, { tty: process.stdout.isTTY === true, file: join(root, 'tmp', 'dev-secrets.env') })) console.log(line);
if (fakeStripe) console.log(`  fake Stripe     ${env.STRIPE_API_BASE} (checkout and portal pages; webhooks to billing-worker)`);
console.log('Ctrl-C stops them all.\n');
