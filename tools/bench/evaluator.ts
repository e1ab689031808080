/**
 * Micro-benchmark of @flagship/flag-evaluation on one core.
 *
 *   TS_NODE_PROJECT=tsconfig.json node -r ts-node/register/transpile-only -r tsconfig-paths/register \
 *     tools/bench/evaluator.ts [secondsPerCase]
 *
 * Each case runs for a fixed time (default 2 s, after a short warm-up) and reports evaluations per
 * second, plus the ratio to a baseline measured in the same run (a Map lookup keyed by the context
 * key through a function call), so figures from different machines can be compared.
 * Context keys and attributes vary across iterations (4096 distinct contexts).
 */
import { CompiledFlagSet, type EvaluationContext } from '@flagship/flag-evaluation';
import { BATCH, BENCH_FLAGS, KIND_SEGMENT_FLAGS, KIND_SEGMENT_SEGMENTS, makeContexts, makeMultiContexts } from './evaluator-cases';

const SECONDS = Number(process.argv[2] ?? process.env.BENCH_SECONDS ?? 2);
const WARMUP_MS = 300;

const set = CompiledFlagSet.compile(BENCH_FLAGS);
const kindSet = CompiledFlagSet.compile(KIND_SEGMENT_FLAGS, KIND_SEGMENT_SEGMENTS);

const contexts = makeContexts();
const multiContexts = makeMultiContexts();
// The kinds and segments cases measure matching, not an error path: a member matches, others fall through.
for (const [key, list] of [['segment-100', contexts], ['segment-10000', contexts], ['organization-rule', multiContexts]] as const) {
  const reasons = [0, 1].map((i) => kindSet.evaluate(key, list[i] as EvaluationContext)?.reason);
  if (reasons.join() !== 'RULE_MATCH,FALLTHROUGH') throw new Error(`${key}: ${reasons.join()}`);
}
const baselineMap = new Map<string, number>(contexts.map((c, i) => [c.key as string, i]));
function baseline(ctx: EvaluationContext): number {
  return baselineMap.get(ctx.key as string) ?? -1;
}

interface Row {
  name: string;
  perSecond: number;
}

/** Runs `body` over the contexts until `ms` have passed; returns evaluations per second. */
function measure(body: (ctx: EvaluationContext) => unknown, ms: number, list: EvaluationContext[]): number {
  let sink = 0;
  let iterations = 0;
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(Math.round(ms * 1e6));
  let now = start;
  while (now < deadline) {
    for (let i = 0; i < BATCH; i++) {
      // Touch the result so the call cannot be optimised away.
      if (body(list[i] as EvaluationContext) !== undefined) sink++;
    }
    iterations += BATCH;
    now = process.hrtime.bigint();
  }
  if (sink !== iterations) throw new Error('a case returned undefined');
  return iterations / (Number(now - start) / 1e9);
}

function run(name: string, body: (ctx: EvaluationContext) => unknown, list = contexts): Row {
  measure(body, WARMUP_MS, list);
  return { name, perSecond: measure(body, SECONDS * 1000, list) };
}

const rows: Row[] = [
  run('baseline: Map.get via a function call', baseline),
  run('1 rule, 1 `in` clause', (ctx) => set.evaluate('one-rule', ctx)),
  run('20 rules, mixed operators', (ctx) => set.evaluate('twenty-rules', ctx)),
  run('200 rules, mixed operators', (ctx) => set.evaluate('two-hundred-rules', ctx)),
  run('fallthrough rollout (SHA-1)', (ctx) => set.evaluate('rollout', ctx)),
  run('segmentMatch, 100 included keys', (ctx) => kindSet.evaluate('segment-100', ctx)),
  run('segmentMatch, 10,000 included keys', (ctx) => kindSet.evaluate('segment-10000', ctx)),
  run('multi-kind context, organization rule', (ctx) => kindSet.evaluate('organization-rule', ctx), multiContexts),
];

const base = rows[0]!.perSecond;
const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
console.log(`node ${process.version}, ${SECONDS} s per case, ${BATCH} distinct contexts\n`);
console.log(`${'case'.padEnd(40)} ${'evals/s'.padStart(14)} ${'ns/eval'.padStart(9)} ${'vs baseline'.padStart(12)}`);
for (const r of rows) {
  console.log(
    `${r.name.padEnd(40)} ${fmt(r.perSecond).padStart(14)} ${(1e9 / r.perSecond).toFixed(0).padStart(9)} ${(r.perSecond / base).toFixed(3).padStart(12)}`,
  );
}
