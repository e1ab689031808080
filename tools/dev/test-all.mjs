#!/usr/bin/env node
// `npm test`: everything CI runs, in two lanes so the machine's two cores both work.
//   1. lint and typecheck (one lane) beside the build (the other): all CPU-bound. With TypeScript 7
//      this phase is about 40 s; the console's Vitest tests added to it (in a lane of theirs, or after
//      either) made it 53 to 65 s, more than they cost beside jest.
//   2. jest, every layer, with JEST_WORKERS files at once (default 4: most int and e2e files wait on
//      Postgres, Redis, a started app or a timer; jest took 250 s with four against 265 s with three,
//      Postgres peaking at 40 of its 100 connections), beside the console's Vitest tests.
// A lane's output is printed whole when it ends (jest's streams as it runs), each step with its time;
// the run fails when any step fails, after both lanes of its phase have ended.
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');

const npmRun = (script) => ({ name: script, cmd: 'npm', args: ['run', '--silent', script] });

async function main() {
  await runSteps([{ name: 'check-services', cmd: process.execPath, args: ['tools/dev/check-services.mjs'] }], { stream: true });
  await phase([
    [npmRun('lint'), npmRun('typecheck')],
    [npmRun('build')],
  ]);
  // The build above is current, so the specs that start management-api from its sources may start the
  // build instead (apps/management-api/src/testing/management-api.process.ts). Node keeps the code it
  // compiles for the processes of the run (the specs start the apps again and again, each boot
  // loading some 2,500 modules): a management-api boot then takes 0.82 s of CPU instead of 1.0 s.
  process.env.TEST_APPS_BUILT = '1';
  process.env.NODE_COMPILE_CACHE ??= join(ROOT, 'tmp/node-compile-cache');
  await phase([
    [{ ...npmRun('test:jest'), stream: true }],
    [npmRun('test:console')],
  ]);
}

/** Runs lanes side by side, each a list of steps one after another; throws once all have ended if any failed. */
async function phase(lanes) {
  const results = await Promise.allSettled(lanes.map((steps) => runSteps(steps)));
  const failed = results.filter((r) => r.status === 'rejected');
  if (failed.length > 0) throw new Error(failed.map((r) => r.reason.message).join('; '));
}

async function runSteps(steps, { stream = false } = {}) {
  for (const step of steps) {
    const started = Date.now();
    const code = await run(step, stream || step.stream === true);
    const seconds = ((Date.now() - started) / 1000).toFixed(0);
    process.stdout.write(`\n=== ${step.name}: ${code === 0 ? 'passed' : `failed (exit ${code})`} in ${seconds} s\n`);
    if (code !== 0) throw new Error(`${step.name} failed`);
  }
}

function run(step, stream) {
  return new Promise((resolve) => {
    const child = spawn(step.cmd, step.args, { stdio: stream ? 'inherit' : ['ignore', 'pipe', 'pipe'], env: process.env });
    const out = [];
    if (!stream) {
      child.stdout.on('data', (b) => out.push(b));
      child.stderr.on('data', (b) => out.push(b));
    }
    child.on('error', (err) => {
      out.push(Buffer.from(`${err.message}\n`));
    });
    child.on('close', (code) => {
      if (!stream && out.length > 0) process.stdout.write(Buffer.concat(out));
      resolve(code ?? 1);
    });
  });
}

main().catch((err) => {
  process.stderr.write(`\nnpm test failed: ${err.message}\n`);
  process.exit(1);
});
