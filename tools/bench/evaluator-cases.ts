/**
 * The flags and contexts of the evaluator benchmarks (evaluator.ts, evaluator-ab.ts): one definition,
 * so an A/B run measures exactly what the benchmark measures.
 */
import type { EvaluationContext, FlagDefinition, Rule, SegmentDefinition, Variation } from '@flagship/flag-evaluation';

/** Iterations between clock reads; also the number of distinct contexts. */
export const BATCH = 4096;

const COUNTRIES = ['FR', 'DE', 'US', 'GB', 'JP', 'BR', 'IN', 'ES'];
const PLANS = ['free', 'standard', 'premium'];

export function makeContexts(): EvaluationContext[] {
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

/** The benchmark's flags: what an evaluation of each case reads. */
export const BENCH_FLAGS: FlagDefinition[] = [
  // The simple flag of the 1,000,000 evals/s target: one rule, one `in` clause (a quarter match).
  flag('one-rule', [{ id: 'r0', clauses: [{ attribute: 'country', op: 'in', values: ['FR', 'DE'] }], variationId: 'on' }]),
  flag('twenty-rules', realisticRules(20)),
  flag('two-hundred-rules', realisticRules(200)),
  // Fallthrough percentage rollout: every evaluation hashes (SHA-1).
  flag('rollout', [], { variations: [{ ...variations[0]!, weight: 1 }, { ...variations[1]!, weight: 3 }] }),
];

/**
 * Issue 33's cases, apart from BENCH_FLAGS because evaluator-ab.ts compiles those with versions that
 * predate segments and kinds: segmentMatch on a segment of 100 and of 10,000 included keys (a set
 * lookup costs the same for both; a scan would not), and a rule on an organization attribute read
 * from a multi-kind context. The 10,000-key segment holds every fourth context (and keys no context
 * has), the 100-key one the first hundred of those; every fourth organization is on the plan.
 */
const memberKeys = (count: number): string[] => Array.from({ length: count }, (_, i) => `user-${i * 4 * 7919}`);

function segmentOf(key: string, included: string[]): SegmentDefinition {
  return { key, name: key, included, excluded: [], includedContexts: [], excludedContexts: [], rules: [] };
}

export const KIND_SEGMENT_SEGMENTS: SegmentDefinition[] = [segmentOf('members-100', memberKeys(100)), segmentOf('members-10000', memberKeys(10_000))];

const inSegment = (segment: string): Rule[] => [{ id: 'member', clauses: [{ attribute: 'key', op: 'segmentMatch', values: [segment] }], variationId: 'on' }];

export const KIND_SEGMENT_FLAGS: FlagDefinition[] = [
  flag('segment-100', inSegment('members-100')),
  flag('segment-10000', inSegment('members-10000')),
  flag('organization-rule', [{ id: 'enterprise', clauses: [{ contextKind: 'organization', attribute: 'plan', op: 'in', values: ['enterprise'] }], variationId: 'on' }]),
];

/** The contexts of makeContexts as multi-kind contexts: the user and an organization of one of 64. */
export function makeMultiContexts(): EvaluationContext[] {
  return makeContexts().map((user, i) => ({ kind: 'multi', user, organization: { key: `org-${i % 64}`, plan: i % 4 === 0 ? 'enterprise' : 'team' } }));
}
