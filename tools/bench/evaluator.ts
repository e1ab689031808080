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
import {
  CompiledFlagSet,
  type EvaluationContext,
  type FlagDefinition,
  type Rule,
  type Variation,
} from '@flagship/flag-evaluation';

const SECONDS = Number(process.argv[2] ?? process.env.BENCH_SECONDS ?? 2);
const WARMUP_MS = 300;
const BATCH = 4096; // iterations between clock reads; also the number of distinct contexts

const COUNTRIES = ['FR', 'DE', 'US', 'GB', 'JP', 'BR', 'IN', 'ES'];
const PLANS = ['free', 'standard', 'premium'];

function makeContexts(): EvaluationContext[] {
  const contexts: EvaluationContext[] = [];
  for (let i = 0; i < BATCH; i++) {
    contexts.push({
      key: `user-${i * 7919}`,
      country: COUNTRIES[i % COUNTRIES.length],
      plan: PLANS[i % PLANS.length],
      email: `person${i}@example${i % 5}.com`,
      appVersion: `${1 + (i % 4)}.${i % 10}.${i % 7}`,
      age: 18 + (i % 60),
      createdAt: 1_700_000_000_000 + i * 3_600_000,
      groups: ['beta', `cohort-${i % 16}`],
    });
  }
  return contexts;
}

const variations: Variation[] = [
  { id: 'on', name: 'On', value: true, weight: 0 },
  { id: 'off', name: 'Off', value: false, weight: 0 },
];

function flag(key: string, rules: Rule[], extra: Partial<FlagDefinition> = {}): FlagDefinition {
  return {
    key,
    type: 'boolean',
    defaultValue: false,
    variations,
    enabled: true,
    targets: [{ variationId: 'on', values: ['vip-1', 'vip-2', 'vip-3'] }],
    rules,
    prerequisites: [],
    ...extra,
  };
}

/**
 * Rules that look like real targeting (several operators, one to three clauses) but that almost
 * never match the generated contexts, so an evaluation scans all of them before falling through.
 * Some first clauses do match, so later clauses get evaluated too.
 */
function realisticRules(count: number): Rule[] {
  const rules: Rule[] = [];
  for (let i = 0; i < count; i++) {
    const n = `${i}`;
    switch (i % 8) {
      case 0:
        rules.push({ id: `r${n}`, clauses: [{ attribute: 'country', op: 'in', values: [`X${n}`, `Y${n}`, 'ZZ'] }], variationId: 'on' });
        break;
      case 1: // first clause matches a third of contexts, second never
        rules.push({
          id: `r${n}`,
          clauses: [
            { attribute: 'plan', op: 'in', values: ['premium'] },
            { attribute: 'email', op: 'endsWith', values: [`@customer${n}.com`] },
          ],
          variationId: 'on',
        });
        break;
      case 2:
        rules.push({ id: `r${n}`, clauses: [{ attribute: 'email', op: 'startsWith', values: [`admin${n}@`, `ops${n}@`] }], variationId: 'on' });
        break;
      case 3: // matches most contexts, then a regex that does not
        rules.push({
          id: `r${n}`,
          clauses: [
            { attribute: 'age', op: 'greaterThanOrEqual', values: [21] },
            { attribute: 'email', op: 'matches', values: [`^qa-${n}-[0-9]+@internal\\.test$`] },
          ],
          variationId: 'on',
        });
        break;
      case 4:
        rules.push({ id: `r${n}`, clauses: [{ attribute: 'appVersion', op: 'semVerGreaterThan', values: ['9.0.0'] }], variationId: 'on' });
        break;
      case 5:
        rules.push({ id: `r${n}`, clauses: [{ attribute: 'createdAt', op: 'before', values: ['2001-01-01T00:00:00Z'] }], variationId: 'on' });
        break;
      case 6: // array attribute, negated: everyone is in 'beta', so the negation fails
        rules.push({ id: `r${n}`, clauses: [{ attribute: 'groups', op: 'in', values: ['beta'], negate: true }], variationId: 'on' });
        break;
      default:
        rules.push({
          id: `r${n}`,
          clauses: [
            { attribute: 'country', op: 'in', values: ['FR', 'DE'] },
            { attribute: 'key', op: 'contains', values: [`-never-${n}`] },
          ],
          rollout: { variations: [{ variationId: 'on', weight: 1 }, { variationId: 'off', weight: 3 }] },
        });
    }
  }
  return rules;
}

const set = CompiledFlagSet.compile([
  // The simple flag of the 1,000,000 evals/s target: one rule, one `in` clause (a quarter match).
  flag('one-rule', [{ id: 'r0', clauses: [{ attribute: 'country', op: 'in', values: ['FR', 'DE'] }], variationId: 'on' }]),
  flag('twenty-rules', realisticRules(20)),
  flag('two-hundred-rules', realisticRules(200)),
  // Fallthrough percentage rollout: every evaluation hashes (SHA-1).
  flag('rollout', [], { variations: [{ ...variations[0]!, weight: 1 }, { ...variations[1]!, weight: 3 }] }),
]);

const contexts = makeContexts();
const baselineMap = new Map<string, number>(contexts.map((c, i) => [c.key as string, i]));
function baseline(ctx: EvaluationContext): number {
  return baselineMap.get(ctx.key as string) ?? -1;
}

interface Row {
  name: string;
  perSecond: number;
}

/** Runs `body` over the contexts until `ms` have passed; returns evaluations per second. */
function measure(body: (ctx: EvaluationContext) => unknown, ms: number): number {
  let sink = 0;
  let iterations = 0;
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(Math.round(ms * 1e6));
  let now = start;
  while (now < deadline) {
    for (let i = 0; i < BATCH; i++) {
      // Touch the result so the call cannot be optimised away.
      if (body(contexts[i] as EvaluationContext) !== undefined) sink++;
    }
    iterations += BATCH;
    now = process.hrtime.bigint();
  }
  if (sink !== iterations) throw new Error('a case returned undefined');
  return iterations / (Number(now - start) / 1e9);
}

function run(name: string, body: (ctx: EvaluationContext) => unknown): Row {
  measure(body, WARMUP_MS);
  return { name, perSecond: measure(body, SECONDS * 1000) };
}

const rows: Row[] = [
  run('baseline: Map.get via a function call', baseline),
  run('1 rule, 1 `in` clause', (ctx) => set.evaluate('one-rule', ctx)),
  run('20 rules, mixed operators', (ctx) => set.evaluate('twenty-rules', ctx)),
  run('200 rules, mixed operators', (ctx) => set.evaluate('two-hundred-rules', ctx)),
  run('fallthrough rollout (SHA-1)', (ctx) => set.evaluate('rollout', ctx)),
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
