/**
 * A/B of two versions of the evaluator in one process, for a machine shared with other work:
 * slices of each case alternate between A (another copy of libs/flag-evaluation/src, say an earlier
 * commit's) and B (this tree's), so load on the machine falls on both alike; each slice is measured
 * in this process's CPU time (time spent waiting for a core does not count), and the ratio of their
 * median slices is reported per case.
 *
 *   mkdir -p tmp/base && git archive <commit> libs/flag-evaluation/src | tar -x -C tmp/base
 *   TS_NODE_PROJECT=tsconfig.json node -r ts-node/register/transpile-only -r tsconfig-paths/register \
 *     tools/bench/evaluator-ab.ts tmp/base/libs/flag-evaluation/src/index.ts [rounds]
 *
 * B/A above 1 means B evaluates faster.
 */
import { resolve } from 'node:path';
import * as current from '@flagship/flag-evaluation';
import { BATCH, BENCH_FLAGS, makeContexts } from './evaluator-cases';

type Lib = Pick<typeof current, 'CompiledFlagSet'>;

const basePath = process.argv[2];
if (basePath === undefined) throw new Error('usage: evaluator-ab.ts <path to the other index.ts> [rounds]');
const ROUNDS = Number(process.argv[3] ?? 15);
const SLICE_MS = 150;

// eslint-disable-next-line @typescript-eslint/no-require-imports -- a path given at run time
const base = require(resolve(basePath)) as Lib;
const contexts = makeContexts();
const sets = { A: base.CompiledFlagSet.compile(BENCH_FLAGS), B: current.CompiledFlagSet.compile(BENCH_FLAGS) };

const cpuMicros = (): number => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

/** Evaluations per CPU second of `key` with `set` over one slice of `ms` CPU milliseconds. */
function slice(set: { evaluate(key: string, ctx: Record<string, unknown>): unknown }, key: string, ms: number): number {
  let iterations = 0;
  let sink = 0;
  const start = cpuMicros();
  const deadline = start + ms * 1000;
  let now = start;
  while (now < deadline) {
    for (let i = 0; i < BATCH; i++) if (set.evaluate(key, contexts[i] as Record<string, unknown>) !== undefined) sink++;
    iterations += BATCH;
    now = cpuMicros();
  }
  if (sink !== iterations) throw new Error(`${key} returned undefined`);
  return iterations / ((now - start) / 1e6);
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

console.log(`node ${process.version}, ${ROUNDS} rounds of ${SLICE_MS} ms slices, A = ${basePath}, B = this tree\n`);
console.log(`${'case'.padEnd(20)} ${'A evals/s'.padStart(12)} ${'B evals/s'.padStart(12)} ${'B/A'.padStart(7)}`);
// AB_CASES=one-rule,rollout measures only those.
const only = process.env['AB_CASES']?.split(',');
for (const key of BENCH_FLAGS.map((f) => f.key).filter((k) => only === undefined || only.includes(k))) {
  slice(sets.A, key, 300);
  slice(sets.B, key, 300);
  const a: number[] = [];
  const b: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    // Alternating which goes first, so neither always follows the other's garbage.
    if (round % 2 === 0) {
      a.push(slice(sets.A, key, SLICE_MS));
      b.push(slice(sets.B, key, SLICE_MS));
    } else {
      b.push(slice(sets.B, key, SLICE_MS));
      a.push(slice(sets.A, key, SLICE_MS));
    }
  }
  const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
  console.log(`${key.padEnd(20)} ${fmt(median(a)).padStart(12)} ${fmt(median(b)).padStart(12)} ${(median(b) / median(a)).toFixed(3).padStart(7)}`);
}
