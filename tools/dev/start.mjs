// `npm start`: install what is missing, build, migrate, seed the demo tenant, start every app,
// print their addresses, and stop them all on Ctrl-C.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { APPS, entry } from './apps.mjs';

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
run(process.execPath, [entry('management-api', 'seed')]);

const env = {
  NODE_ENV: 'development',
  // The remote evaluation server needs a token; this one is for local use only. It serves the
  // example flag file, watched: edit it and the server reloads.
  OREP_AUTH_TOKEN: 'dev-orep-token',
  OREP_FLAGS_FILE: 'apps/orep-server/flags.example.json',
  ...process.env,
};

// No Stripe configured: the fake Stripe of libs/testing, so checkout and portal links work locally
// (its pages at /checkout/... and /portal/... complete the flow and send webhooks to billing-worker).
let fakeStripe;
if (!env.STRIPE_SECRET_KEY) {
  const worker = APPS.find((a) => a.name === 'billing-worker');
  fakeStripe = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', 'tools/dev/fake-stripe.ts'], {
    env: { ...env, TS_NODE_PROJECT: 'tsconfig.json', FAKE_STRIPE_PORT: env.FAKE_STRIPE_PORT ?? '12111', FAKE_STRIPE_WEBHOOK_URL: `http://127.0.0.1:${worker.port}/webhooks/stripe` },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const settings = await new Promise((resolve) => {
    let out = '';
    fakeStripe.stdout.on('data', (c) => {
      out += c;
      const m = /^fake stripe settings (.*)$/m.exec(out);
      if (m) resolve(JSON.parse(m[1]));
    });
    fakeStripe.on('exit', () => resolve(undefined));
  });
  if (!settings) {
    console.error('the fake Stripe did not start');
    process.exit(1);
  }
  Object.assign(env, settings);
}

const children = APPS.map(({ name }) => {
  const child = spawn(process.execPath, [entry(name)], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  for (const stream of [child.stdout, child.stderr]) {
    let rest = '';
    stream.on('data', (chunk) => {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop();
      for (const line of lines) process.stdout.write(`[${name}] ${line}\n`);
    });
  }
  child.on('exit', (code, signal) => {
    if (!stopping) {
      console.error(`[${name}] exited (${code ?? signal}); stopping the others`);
      stop(1);
    }
  });
  return child;
});

let stopping = false;
function stop(code = 0) {
  if (stopping) return;
  stopping = true;
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
  if (fakeStripe?.exitCode === null) fakeStripe.kill('SIGTERM');
  Promise.all(children.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : null))).then(() => process.exit(code));
  setTimeout(() => process.exit(code), 15000).unref();
}
process.on('SIGINT', () => stop(0));
process.on('SIGTERM', () => stop(0));

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
for (const [a, ok] of results) console.log(`  ${a.name.padEnd(15)} http://127.0.0.1:${a.port}${ok ? '' : '  (not healthy yet)'}`);
console.log(`  API docs        http://127.0.0.1:3000/docs`);
console.log(`  orep token      ${env.OREP_AUTH_TOKEN}`);
if (fakeStripe) console.log(`  fake Stripe     ${env.STRIPE_API_BASE} (checkout and portal pages; webhooks to billing-worker)`);
console.log('Ctrl-C stops them all.\n');
