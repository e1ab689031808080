import { randomUUID } from 'node:crypto';
import type { FlagType, JsonValue } from '@flagship/domain';
import type { Prerequisite, Rule, Target, Variation } from '@flagship/flag-evaluation';

/** Demo users of a sandbox: context keys with the attributes the demo rules look at. */
export const DEMO_USERS: ReadonlyArray<{ key: string; attributes: Record<string, JsonValue> }> = [
  { key: 'alice', attributes: { country: 'NO', email: 'alice@example.com', appVersion: '2.4.0', plan: 'pro', signupDate: '2026-01-15T00:00:00Z' } },
  { key: 'bob', attributes: { country: 'US', email: 'bob@example.org', appVersion: '1.9.3', plan: 'free', signupDate: '2024-06-01T00:00:00Z' } },
  { key: 'chen', attributes: { country: 'SG', email: 'chen@example.com', appVersion: '2.0.0', plan: 'pro', signupDate: '2025-03-10T00:00:00Z' } },
  { key: 'dara', attributes: { country: 'IE', email: 'dara@beta.example.com', appVersion: '3.0.0-beta.1', plan: 'enterprise', signupDate: '2026-09-01T00:00:00Z' } },
  { key: 'emeka', attributes: { country: 'NG', email: 'emeka@example.com', appVersion: '2.4.1', plan: 'free', signupDate: '2023-11-20T00:00:00Z' } },
];

export interface DemoFlag {
  key: string;
  name: string;
  description: string;
  type: FlagType;
  defaultValue: JsonValue;
  variations: Variation[];
  targets: Target[];
  rules: Rule[];
  prerequisites: Prerequisite[];
}

const v = (name: string, value: JsonValue, weight = 0): Variation => ({ id: randomUUID(), name, value, description: '', weight });

/** The demo flags: together they show every kind of targeting the evaluator has. */
export function demoFlags(): DemoFlag[] {
  const [on, off] = [v('on', true), v('off', false)];
  const [green, blue] = [v('green', 'green'), v('blue', 'blue')];
  const [newCheckout, oldCheckout] = [v('new', true), v('old', false)];
  const [compact, roomy] = [v('compact', { columns: 3, dense: true }, 1), v('roomy', { columns: 2, dense: false }, 1)];
  const [betaOn, betaOff] = [v('on', true), v('off', false)];
  const [limit10, limit100] = [v('ten', 10), v('hundred', 100)];
  return [
    {
      key: 'demo-maintenance-banner',
      name: 'Maintenance banner',
      description: 'Individual targeting: alice and dara see it, everyone else does not.',
      type: 'boolean',
      defaultValue: false,
      variations: [on, off],
      targets: [{ variationId: on.id, values: ['alice', 'dara'] }],
      rules: [],
      prerequisites: [],
    },
    {
      key: 'demo-button-colour',
      name: 'Button colour',
      description: 'Rules on strings: Nordic countries (in) and example.org addresses (endsWith) get green.',
      type: 'string',
      defaultValue: 'blue',
      variations: [green, blue],
      targets: [],
      rules: [
        { id: 'nordics', description: 'Nordic countries', clauses: [{ attribute: 'country', op: 'in', values: ['NO', 'SE', 'DK', 'FI', 'IS'] }], variationId: green.id },
        { id: 'org-mail', description: 'example.org users', clauses: [{ attribute: 'email', op: 'endsWith', values: ['@example.org'] }], variationId: green.id },
      ],
      prerequisites: [],
    },
    {
      key: 'demo-new-checkout',
      name: 'New checkout',
      description: 'A percentage rollout for pro users (50/50 by user key), semver for the rest.',
      type: 'boolean',
      defaultValue: false,
      variations: [newCheckout, oldCheckout],
      targets: [],
      rules: [
        {
          id: 'pro-rollout',
          description: 'Pro plan: half get it',
          clauses: [{ attribute: 'plan', op: 'in', values: ['pro'] }],
          rollout: { variations: [{ variationId: newCheckout.id, weight: 50 }, { variationId: oldCheckout.id, weight: 50 }] },
        },
        { id: 'recent-app', description: 'App 2.4.0 or newer', clauses: [{ attribute: 'appVersion', op: 'semVerGreaterThan', values: ['2.3.99'] }], variationId: newCheckout.id },
      ],
      prerequisites: [],
    },
    {
      key: 'demo-dashboard-layout',
      name: 'Dashboard layout',
      description: 'A JSON flag whose fallthrough is a weighted split between two layouts.',
      type: 'json',
      defaultValue: { columns: 2, dense: false },
      variations: [compact, roomy],
      targets: [],
      rules: [],
      prerequisites: [],
    },
    {
      key: 'demo-beta-program',
      name: 'Beta program',
      description: 'Regex and dates: beta addresses, or anyone who signed up after 2026-06-01; needs the new checkout.',
      type: 'boolean',
      defaultValue: false,
      variations: [betaOn, betaOff],
      targets: [],
      rules: [
        { id: 'beta-mail', description: 'beta addresses', clauses: [{ attribute: 'email', op: 'matches', values: ['@beta\\.'] }], variationId: betaOn.id },
        { id: 'new-signups', description: 'recent sign-ups', clauses: [{ attribute: 'signupDate', op: 'after', values: ['2026-06-01T00:00:00Z'] }], variationId: betaOn.id },
      ],
      prerequisites: [{ key: 'demo-new-checkout', variationId: newCheckout.id }],
    },
    {
      key: 'demo-api-limit',
      name: 'API limit',
      description: 'A number flag: enterprise gets 100 requests, everyone else the default 10.',
      type: 'number',
      defaultValue: 10,
      variations: [limit10, limit100],
      targets: [],
      rules: [{ id: 'enterprise', description: 'Enterprise plan', clauses: [{ attribute: 'plan', op: 'in', values: ['enterprise'] }], variationId: limit100.id }],
      prerequisites: [],
    },
  ];
}
