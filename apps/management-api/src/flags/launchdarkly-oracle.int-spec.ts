import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { basicLogger, FileDataSourceFactory, init, type LDClient, type LDContext } from '@launchdarkly/node-server-sdk';
import { type EvaluationContext as OpenFeatureContext, OpenFeature } from '@openfeature/server-sdk';
import { CompiledFlagSet, type EvaluationResult, type FlagDefinition, openFeatureReason } from '@flagship/flag-evaluation';
import { FlagshipInProcessProvider } from '@flagship/sdk';
import { type HttpResult, seededRandom } from '@flagship/testing';
import { ManagementApiFixture, type SignedUp } from '../testing/management-api.fixture';
import { type ImportedFlag, mapLaunchDarklyFlags, mapLaunchDarklySegments, parseLaunchDarklyData } from './launchdarkly-import';

/**
 * LaunchDarkly's own Node SDK as the oracle: a few hundred random flags (every operator, odd clause
 * values, targets, prerequisites, rollouts with and without seeds, salts absent, empty or set) and
 * contexts are evaluated by the SDK offline, from an SDK data file, and by our API after
 * POST /api/flags/import of the very same data. Every (flag, context) must get the same value, the
 * same variation index and the same reason (rule id and index included).
 *
 * Left out of the generator on purpose, as documented divergences between LaunchDarkly's SDKs:
 * objects and arrays in `in` equal to a context's (Node compares by reference, Go/Java and we
 * structurally), dates Node's Date.parse accepts and Go's RFC 3339 parser refuses (`2024-02-30`,
 * hour 24, lowercase `t`/`z`), semantic versions with surrounding spaces (Node's semver trims), and
 * attribute references with a path component starting with `~` (`/~1a`: Node's unescape skips such a
 * component; we unescape it, as the reference syntax says, and read the attribute `/a`).
 *
 * The second part (contexts with kinds and segments) compares the evaluator itself with the SDK,
 * through the import's conversion (parseLaunchDarklyData, mapLaunchDarklyFlags,
 * mapLaunchDarklySegments) and CompiledFlagSet: single-kind contexts of three kinds, multi-kind
 * contexts, clauses of every kind (the built-in `kind` and `anonymous` included), attribute references
 * per kind, contextTargets, rollouts by kind and bucketBy, and segments (included and excluded keys
 * per kind, rules with weights, bucketBy and rolloutContextKind, nested segmentMatch, a cycle). Not
 * compared, as CONTRACT.md does differently or our model refuses them at the door: experiments
 * (rollouts of kind `experiment`), variation indices of repeated values and flags mixing value types
 * (refused by the import), big segments (`unbounded`, refused), `multi` as a kind inside a multi-kind
 * context and clauses of contextKind `multi` (refused at validation; LaunchDarkly accepts the first
 * and never matches the second), legacy users with an empty key (LaunchDarkly evaluates them; a
 * context key must not be empty here), contexts without `kind` keyed by `targetingKey`/`userId`
 * (ours only), and a clause that errs (a segment cycle) followed by more clauses of its rule (Node's
 * SDK lets the next clause's answer replace the error; its Go and Java SDKs stop there, as we do).
 *
 * The third part is issue 33's "same answers": such data (kinds, contextTargets, segments; without
 * what the import refuses by design) imported through POST /api/flags/import in one request, then
 * evaluated by the seed's evaluate route (user contexts: it takes a user), by the in-process
 * OpenFeature provider (every context, multi-kind ones as OpenFeature's flat context), by our
 * evaluator over the import's conversion and by LaunchDarkly's SDK: the same value, variation and reason.
 */

const FLAGS = Number(process.env['ORACLE_FLAGS'] ?? 300);
// 300 x 12 = 3600 evaluations through real HTTP: about a minute on a busy 2-core machine.
const CONTEXTS = Number(process.env['ORACLE_CONTEXTS'] ?? 12);
const SEED = Number(process.env['ORACLE_SEED'] ?? 20261122);


type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

class Gen {
  constructor(readonly next: () => number) {}
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)] as T;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  some<T>(xs: readonly T[], max: number): T[] {
    return Array.from({ length: 1 + this.int(max) }, () => this.pick(xs));
  }
}

const KEYS = ['userKeyA', 'userKeyB', 'userKeyC', 'alice', 'bob', 'carol', 'dave', 'erin', 'qa-1', 'qa-2', '42', 'ünï-cødé', 'a.b-c_d'];
const COUNTRIES = ['NO', 'SE', 'FR', 'no', 'US', ''];
const VERSIONS = ['1', '1.2', '1.2.3', '2.0.0-rc.1', '2.0.0', '1.10.0', '2.0.0-beta', '1.2.3+build.5', 'v1.2.3', '1.2.3.4', '01.2.3', 'x'];
const DATES = [1_700_000_000_000, 1_600_000_000_000, '2024-01-01T00:00:00Z', '2023-06-15T12:30:00+02:00', '2025-12-31T23:59:59.999Z', '2020-02-29T00:00:00-05:00'];
const EMAILS = ['a@example.com', 'b@example.org', 'c@test.example.com', 'no-at-sign', 'X@EXAMPLE.COM'];
const TAGS = ['beta', 'staff', 'vip', 'internal'];

/** Context attributes: odd types on purpose (ints, floats, numeric strings, arrays, objects, null). */
function makeContext(g: Gen, i: number): LDContext & Record<string, unknown> {
  const ctx: LDContext & Record<string, unknown> = { kind: 'user', key: i < KEYS.length ? (KEYS[i] as string) : `user-${i}-${g.int(1000)}` };
  if (g.chance(0.8)) ctx['country'] = g.pick(COUNTRIES);
  if (g.chance(0.8)) ctx['age'] = g.pick([17, 18, 21, 30.5, 65, '21', -1, 0]);
  if (g.chance(0.7)) ctx['version'] = g.pick(VERSIONS);
  if (g.chance(0.7)) ctx['signup'] = g.pick([...DATES, 'yesterday', '2024-01-01', 1_650_000_000_000]);
  if (g.chance(0.7)) ctx['email'] = g.pick(EMAILS);
  if (g.chance(0.6)) ctx['tags'] = g.some(TAGS, 3);
  if (g.chance(0.3)) ctx['/weird'] = g.pick(['yes', 'no']);
  if (g.chance(0.5)) ctx['address'] = { city: g.pick(['Oslo', 'Paris', 'Lyon']), zip: g.pick(['0150', 75001]) };
  // Named like a reference to address.city: only a clause without contextKind reads it (literally).
  if (g.chance(0.5)) ctx['/address/city'] = g.pick(['Oslo', 'Paris', 'Lyon', 'Bergen']);
  if (g.chance(0.6)) ctx['org'] = g.pick(['acme', 'globex', 7, 7.5, true]);
  if (g.chance(0.2)) ctx['nothing'] = null;
  return ctx;
}

const OPS = ['in', 'startsWith', 'endsWith', 'contains', 'matches', 'lessThan', 'lessThanOrEqual', 'greaterThan', 'greaterThanOrEqual', 'before', 'after', 'semVerEqual', 'semVerLessThan', 'semVerGreaterThan'];

/** Values for an operator: mostly usable ones, plus values LaunchDarkly accepts that can never match. */
function clauseValues(g: Gen, op: string): Json[] {
  const odd: Json[] = [null, true, 3, '3', { odd: true }, [1, 2], '(unclosed', 'v2.0.0', 'not a date'];
  const usable: Record<string, Json[]> = {
    in: ['NO', 'SE', 'no', 21, '21', 'alice', 'qa-1', 'beta', 'Oslo', 'Oslo', 'Bergen', 'yes', 'acme', 7, true, ''],
    startsWith: ['N', 'a@', 'b', 'qa', 'u', ''],
    endsWith: ['.com', 'O', 'e', '-1', '.org'],
    contains: ['example', '@', 'l', 'ta', 'x'],
    matches: ['^a', '\\.com$', '^[A-Z]{2}$', 'e.*e', '[0-9]+', '(unclosed', '^$'],
    lessThan: [18, 21, 30.5, 0, -1],
    lessThanOrEqual: [18, 21, 30.5, 65],
    greaterThan: [17, 21, 30, 64.9],
    greaterThanOrEqual: [18, 21, 65, -1],
    before: DATES as Json[],
    after: DATES as Json[],
    semVerEqual: VERSIONS,
    semVerLessThan: VERSIONS,
    semVerGreaterThan: VERSIONS,
  };
  return Array.from({ length: g.int(4) }, () => (g.chance(0.75) ? g.pick(usable[op] ?? []) : g.pick(odd)));
}

type LdFlag = Record<string, Json>;

function rollout(g: Gen, variations: number): Json {
  const slots = 1 + g.int(Math.min(variations, 3) + 1);
  const weights = Array.from({ length: slots }, () => g.int(100_000));
  const shape = g.int(4);
  let scaled: number[];
  if (shape === 0) scaled = weights.map((w) => Math.floor(w / 3)); // adding up to less than 100000
  else if (shape === 1) scaled = weights.map((w) => w * 2); // more than 100000
  else {
    // Exactly 100000, as LaunchDarkly's UI writes them.
    const total = weights.reduce((a, b) => a + b, 0) || 1;
    scaled = weights.map((w) => Math.floor((w / total) * 100_000));
    scaled[scaled.length - 1] = 100_000 - scaled.slice(0, -1).reduce((a, b) => a + b, 0);
  }
  const r: Record<string, Json> = { variations: scaled.map((weight) => ({ variation: g.int(variations), weight })) };
  if (g.chance(0.5)) r['seed'] = g.pick([61, 0, 12345, -7, 2_000_000_000]);
  if (g.chance(0.4)) {
    // Without contextKind bucketBy is a literal name (so '/address/city' is that attribute), with it a reference.
    r['bucketBy'] = g.pick(['org', 'age', 'country', 'missing', 'key', '/address/city', '/weird', '/address/zip']);
    if (g.chance(0.5)) r['contextKind'] = 'user';
  }
  return r;
}

function servedBy(g: Gen, variations: number): Record<string, Json> {
  return g.chance(0.5) ? { variation: g.int(variations) } : { rollout: rollout(g, variations) };
}

function makeFlag(g: Gen, index: number, earlier: Array<{ key: string; variations: number }>): LdFlag {
  const key = `oracle-${index}`;
  const type = g.pick(['boolean', 'string', 'number', 'json']);
  const values: Json[] =
    type === 'boolean'
      ? [true, false]
      : type === 'string'
        ? ['red', 'green', 'blue', 'amber'].slice(0, 2 + g.int(3))
        : type === 'number'
          ? [0, 1.5, -3, 100].slice(0, 2 + g.int(3))
          : ([{ v: 1 }, { v: 2, extra: [true] }, [1, 2, 3]] as Json[]).slice(0, 2 + g.int(2));
  const n = values.length;
  const flag: LdFlag = { key, version: 1 + g.int(50), on: g.chance(0.85), variations: values, fallthrough: servedBy(g, n), trackEvents: false, clientSide: g.chance(0.5) };
  if (g.chance(0.9)) flag['offVariation'] = g.int(n);
  const salt = g.int(5);
  if (salt === 0) flag['salt'] = '';
  else if (salt > 1) flag['salt'] = `salt-${g.int(1e6).toString(16)}`; // salt === 1: none at all
  if (g.chance(0.4)) {
    const shuffled = [...KEYS].sort(() => g.next() - 0.5);
    flag['targets'] = Array.from({ length: 1 + g.int(2) }, (_, i) => ({ values: shuffled.slice(i * 2, i * 2 + 1 + g.int(2)), variation: g.int(n) }));
  }
  flag['rules'] = Array.from({ length: g.int(5) }, (_, i) => {
    const clauses = Array.from({ length: g.int(3) + (g.chance(0.9) ? 1 : 0) }, () => {
      const op = g.pick(OPS);
      const attribute = g.pick(['key', 'country', 'age', 'version', 'signup', 'email', 'tags', '/weird', 'address', 'org', 'nothing', 'absent', '/address/city', '/key']);
      const clause: Record<string, Json> = { attribute, op, values: clauseValues(g, op), negate: g.chance(0.25) };
      // New-style clauses name attributes by reference (contextKind set); old-style ones literally,
      // even those starting with '/': '/address/city' is address.city with a kind, the attribute
      // named '/address/city' without one.
      if (g.chance(0.4)) {
        clause['contextKind'] = 'user';
        if (attribute === 'address' && g.chance(0.5)) clause['attribute'] = '/address/city';
      }
      return clause;
    });
    return { id: `rule-${i}`, clauses, ...servedBy(g, n) } as Json;
  });
  if (earlier.length > 0 && g.chance(0.3)) {
    flag['prerequisites'] = Array.from({ length: 1 + g.int(2) }, () => {
      const p = g.pick(earlier);
      return { key: p.key, variation: g.int(p.variations) };
    }).filter((p, i, all) => all.findIndex((q) => q.key === p.key) === i);
  }
  return flag;
}

/**
 * Flags that tell the two readings of an attribute apart, with contexts whose LaunchDarkly answers
 * are written down: a clause or bucketBy without contextKind names its attribute literally, even when
 * it starts with '/'; with contextKind it is a reference. Each context holds both `address.city`
 * and an attribute literally named `/address/city`, with different values.
 */
const ATTRIBUTE_FLAGS: LdFlag[] = [
  ['attr-literal', { attribute: '/address/city', op: 'in', values: ['Bergen'] }],
  ['attr-reference', { contextKind: 'user', attribute: '/address/city', op: 'in', values: ['Bergen'] }],
  ['attr-escaped-reference', { contextKind: 'user', attribute: '/a~1b', op: 'in', values: ['Bergen'] }],
  ['attr-literal-key', { attribute: '/key', op: 'in', values: ['Bergen'] }],
].map(([key, clause]) => ({ key, version: 1, on: true, variations: ['no', 'yes'], offVariation: 0, fallthrough: { variation: 0 }, rules: [{ id: 'r', clauses: [clause], variation: 1 }] }) as LdFlag);
const SPLIT = [{ variation: 0, weight: 50_000 }, { variation: 1, weight: 50_000 }];
for (const [key, rollout] of [
  ['bucket-literal', { bucketBy: '/address/city', variations: SPLIT }],
  ['bucket-reference', { contextKind: 'user', bucketBy: '/address/city', variations: SPLIT }],
] as const) {
  ATTRIBUTE_FLAGS.push({ key, version: 1, on: true, variations: ['no', 'yes'], offVariation: 0, fallthrough: { rollout: rollout as unknown as Json }, salt: 'attr' });
}
/** [flag, context, the value LaunchDarkly serves (checked against the SDK as well)]. */
const ATTRIBUTE_CASES: Array<[string, LDContext & Record<string, unknown>, string]> = [
  ['attr-literal', { kind: 'user', key: 'k1', address: { city: 'Oslo' }, '/address/city': 'Bergen' }, 'yes'],
  ['attr-literal', { kind: 'user', key: 'k2', address: { city: 'Bergen' }, '/address/city': 'Oslo' }, 'no'],
  ['attr-literal', { kind: 'user', key: 'k3', address: { city: 'Bergen' } }, 'no'],
  ['attr-reference', { kind: 'user', key: 'k1', address: { city: 'Oslo' }, '/address/city': 'Bergen' }, 'no'],
  ['attr-reference', { kind: 'user', key: 'k2', address: { city: 'Bergen' }, '/address/city': 'Oslo' }, 'yes'],
  ['attr-escaped-reference', { kind: 'user', key: 'k1', 'a/b': 'Bergen', a: { b: 'Oslo' } }, 'yes'],
  ['attr-escaped-reference', { kind: 'user', key: 'k2', 'a/b': 'Oslo', a: { b: 'Bergen' } }, 'no'],
  ['attr-literal-key', { kind: 'user', key: 'Bergen' }, 'no'],
  ['attr-literal-key', { kind: 'user', key: 'k1', '/key': 'Bergen' }, 'yes'],
];
// Rollouts: the literal and the reference hash different values, chosen to land in different halves.
for (const [key, literal, nested] of [
  ['bucket-literal', 'Oslo', 'Bergen'],
  ['bucket-literal', 'Bergen', 'Oslo'],
  ['bucket-reference', 'Oslo', 'Paris'],
  ['bucket-reference', 'Paris', 'Oslo'],
] as const) {
  const ctx = { kind: 'user', key: 'k', address: { city: nested }, '/address/city': literal };
  const read = key === 'bucket-literal' ? literal : nested;
  const misread = key === 'bucket-literal' ? nested : literal;
  if (bucketHalf(`${key}.attr.${read}`) === bucketHalf(`${key}.attr.${misread}`)) throw new Error(`${key}: pick cities that tell the readings apart`);
  ATTRIBUTE_CASES.push([key, ctx, bucketHalf(`${key}.attr.${read}`)]);
}

/** The SDK reading the same SDK data file a LaunchDarkly user would export (flags and segments); no network at all. */
async function offlineClient(dir: string, flags: LdFlag[], segments: LdFlag[]): Promise<LDClient> {
  const file = join(dir, 'flags.json');
  writeFileSync(file, JSON.stringify({ flags: Object.fromEntries(flags.map((fl) => [fl['key'], fl])), segments: Object.fromEntries(segments.map((s) => [s['key'], s])) }));
  const client = init('sdk-oracle-offline', {
    updateProcessor: new FileDataSourceFactory({ paths: [file] }).getFactory(),
    sendEvents: false,
    diagnosticOptOut: true,
    logger: basicLogger({ level: 'none' }),
  });
  await client.waitForInitialization({ timeout: 10 });
  return client;
}

/** 'no' or 'yes' for a 50/50 split: LaunchDarkly's bucket of the hash input, computed here. */
function bucketHalf(hashInput: string): string {
  const bucket = parseInt(createHash('sha1').update(hashInput).digest('hex').slice(0, 15), 16) / 0xfffffffffffffff;
  return bucket < 0.5 ? 'no' : 'yes';
}

describe('LaunchDarkly Node SDK as oracle: import, then evaluate through our API', () => {
  let f: ManagementApiFixture;
  let owner: SignedUp;
  let client: LDClient;
  let dir: string;
  const g = new Gen(seededRandom(SEED));
  const flags: LdFlag[] = [];
  const contexts: Array<LDContext & Record<string, unknown>> = [];
  let imported: HttpResult<any>;
  type Ours = { type: string; defaultValue: Json; variations: Array<{ id: string }> };
  const ours = (): Map<string, Ours> => new Map(imported.body.flags.map((fl: Ours & { key: string }) => [fl.key, fl]));
  /** Our answer through the evaluate route, for a LaunchDarkly context (its kind dropped, its key as userId). */
  const evaluate = async (key: string, ctx: LDContext & Record<string, unknown>) => {
    const { kind: _kind, key: userId, ...attributes } = ctx;
    return f.call('POST', `/api/flags/${key}/evaluate`, { token: owner.idToken, tenant: owner.tenantId, json: { userId, attributes } });
  };

  beforeAll(async () => {
    const made: Array<{ key: string; variations: number }> = [];
    for (let i = 0; i < FLAGS; i++) {
      const flag = makeFlag(g, i, made);
      flags.push(flag);
      made.push({ key: flag['key'] as string, variations: (flag['variations'] as Json[]).length });
    }
    for (let i = 0; i < CONTEXTS; i++) contexts.push(makeContext(g, i));
    flags.push(...ATTRIBUTE_FLAGS);

    dir = mkdtempSync(join(tmpdir(), 'ld-oracle-'));
    client = await offlineClient(dir, flags, []);

    // Evaluations per minute well above the free plan's limit.
    f = await ManagementApiFixture.start({ RATE_LIMIT_FREE: '1000000' });
    owner = await f.signUp();
    imported = await f.call('POST', '/api/flags/import', { token: owner.idToken, tenant: owner.tenantId, json: { flags: Object.fromEntries(flags.map((fl) => [fl['key'], fl])) } });
  });
  afterAll(async () => {
    client?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
    await f?.stop();
  });

  it(`imports ${FLAGS} generated flags, and every (flag, context) gets the SDK's value and variation`, async () => {
    expect([imported.status, imported.status === 200 ? '' : imported.text]).toEqual([200, '']);
    expect(imported.body.created).toHaveLength(FLAGS + ATTRIBUTE_FLAGS.length);
    const mineByKey = ours();

    const mismatches: string[] = [];
    const reasons = new Map<string, number>();
    let compared = 0;
    const pairs = flags.flatMap((fl) => contexts.map((ctx) => ({ fl, ctx })));
    const worker = async (): Promise<void> => {
      for (let pair = pairs.pop(); pair !== undefined; pair = pairs.pop()) {
        const { fl, ctx } = pair;
        const key = fl['key'] as string;
        const mine = mineByKey.get(key)!;
        // What we serve where LaunchDarkly serves the caller's default (off with no offVariation).
        const typeDefault = mine.type === 'boolean' ? false : mine.defaultValue;
        const ld = await client.variationDetail(key, ctx, typeDefault);
        const res = await evaluate(key, ctx);
        const index = res.body.variationId === undefined ? null : mine.variations.findIndex((v) => v.id === res.body.variationId);
        reasons.set(ld.reason.kind, (reasons.get(ld.reason.kind) ?? 0) + 1);
        compared++;
        const sameValue = JSON.stringify(res.body.value) === JSON.stringify(ld.value);
        // With no variation served (off without offVariation), LaunchDarkly's index is null and ours
        // names the variation holding that value, if any: the value must agree and the reason be the same.
        const sameIndex = ld.variationIndex === null ? res.body.reason === ld.reason.kind : index === ld.variationIndex;
        // Reasons agree too (LaunchDarkly's fallthrough, imported as the last rule `fallthrough`, answers FALLTHROUGH).
        const expectedReason =
          ld.reason.kind === 'FALLTHROUGH'
            ? { reason: 'FALLTHROUGH', ruleId: undefined, ruleIndex: undefined }
            : ld.reason.kind === 'RULE_MATCH'
              ? { reason: 'RULE_MATCH', ruleId: ld.reason.ruleId, ruleIndex: ld.reason.ruleIndex }
              : { reason: ld.reason.kind };
        const sameReason = Object.entries(expectedReason).every(([k, v]) => res.body[k] === v);
        if (res.status !== 200 || ld.reason.kind === 'ERROR' || !sameValue || !sameIndex || !sameReason) {
          mismatches.push(`${key} ${JSON.stringify(ctx)}: LaunchDarkly ${JSON.stringify(ld)} vs ours ${res.status} ${JSON.stringify(res.body)} (index ${index})`);
        }
      }
    };
    await Promise.all(Array.from({ length: 6 }, worker));

    expect(mismatches.slice(0, 5)).toEqual([]);
    expect(compared).toBe((FLAGS + ATTRIBUTE_FLAGS.length) * CONTEXTS);
    // The generator reaches every outcome, so the agreement means something.
    for (const kind of ['OFF', 'FALLTHROUGH', 'TARGET_MATCH', 'RULE_MATCH', 'PREREQUISITE_FAILED']) expect([kind, (reasons.get(kind) ?? 0) > 0]).toEqual([kind, true]);
  }, 300_000);

  it('reads a clause or bucketBy attribute literally without contextKind and as a reference with one, as LaunchDarkly does', async () => {
    expect(imported.status).toBe(200);
    const answers: Array<[string, string, unknown, unknown]> = [];
    for (const [key, ctx, expected] of ATTRIBUTE_CASES) {
      const ld = await client.variationDetail(key, ctx, 'default');
      const res = await evaluate(key, ctx);
      answers.push([key, expected, ld.value, res.body.value]);
    }
    // LaunchDarkly's SDK serves what is written down, and so do we.
    expect(answers.filter(([, expected, ld, mine]) => ld !== expected || mine !== expected)).toEqual([]);
    // The cases tell the readings apart: both values are served.
    expect(new Set(answers.map(([, expected]) => expected))).toEqual(new Set(['yes', 'no']));
  });
});

// ---------------------------------------------------------------------------------------------
// Contexts with kinds, multi-kind contexts and segments: the evaluator against the SDK

const KINDS = ['user', 'organization', 'device'] as const;
const KEYS_OF: Record<string, string[]> = {
  user: ['alice', 'bob', 'carol', 'dave', 'shared'],
  organization: ['acme', 'globex', 'initech', 'shared'],
  device: ['d-1', 'd-2', 'd-3', 'shared'],
};
const PLANS = ['free', 'pro', 'enterprise'];
const CITIES = ['Oslo', 'Paris', 'Lyon'];

/** The attributes of one kind's context: plan, size, address (for references), tags, anonymous. */
function kindAttributes(g: Gen, kind: string, i: number): Record<string, unknown> {
  const keys = KEYS_OF[kind] as string[];
  const out: Record<string, unknown> = { key: i < keys.length * 2 ? g.pick(keys) : `${kind}-${i}-${g.int(1000)}` };
  if (g.chance(0.8)) out['plan'] = g.pick(PLANS);
  if (g.chance(0.7)) out['size'] = g.pick([1, 10, 250, 5000]);
  if (g.chance(0.6)) out['address'] = { city: g.pick(CITIES) };
  if (g.chance(0.5)) out['tags'] = g.some(['beta', 'vip', 'eu'], 2);
  if (g.chance(0.2)) out['anonymous'] = g.pick([true, false]);
  return out;
}

function makeKindContext(g: Gen, i: number): LDContext & Record<string, unknown> {
  const shape = g.int(6);
  if (shape < 3) {
    const kind = KINDS[shape] as string;
    return { kind, ...kindAttributes(g, kind, i) } as LDContext & Record<string, unknown>;
  }
  const kinds = shape === 3 ? ['user', 'organization'] : shape === 4 ? ['organization', 'device'] : [...KINDS];
  return { kind: 'multi', ...Object.fromEntries(kinds.map((k) => [k, kindAttributes(g, k, i)])) } as LDContext & Record<string, unknown>;
}

/** A clause of a random kind (absent: user), on a plain attribute, a reference, the key or a built-in. */
function kindClause(g: Gen, segmentKeys: readonly string[]): Record<string, Json> {
  if (segmentKeys.length > 0 && g.chance(0.25)) {
    return { attribute: g.pick(['', 'key', 'segmentMatch']), op: 'segmentMatch', values: g.some([...segmentKeys, 'no-such-segment'], 2), negate: g.chance(0.2) };
  }
  const kind = g.pick([undefined, ...KINDS]);
  const choice = g.int(7);
  let clause: Record<string, Json>;
  if (choice === 0) clause = { attribute: 'kind', op: 'in', values: g.some([...KINDS], 2) };
  else if (choice === 1) clause = { attribute: 'key', op: 'in', values: g.some([...(KEYS_OF[kind ?? 'user'] as string[]), 'shared'], 3) };
  else if (choice === 2) clause = { attribute: 'plan', op: g.pick(['in', 'startsWith']), values: g.some(PLANS.map((p) => p.slice(0, 1 + g.int(p.length))), 2) };
  else if (choice === 3) clause = { attribute: 'size', op: g.pick(['lessThan', 'greaterThanOrEqual']), values: [g.pick([5, 100, 1000])] };
  else if (choice === 4) clause = { attribute: kind === undefined ? 'address' : '/address/city', op: 'in', values: g.some(CITIES, 2) };
  else if (choice === 5) clause = { attribute: 'anonymous', op: 'in', values: [g.pick([true, false])] };
  else clause = { attribute: 'tags', op: 'in', values: g.some(['beta', 'vip', 'eu'], 2) };
  if (kind !== undefined) clause['contextKind'] = kind;
  if (g.chance(0.2)) clause['negate'] = true;
  return clause;
}

function kindRollout(g: Gen, variations: number): Json {
  const weights = relativeSplit(g, 1 + g.int(3));
  const r: Record<string, Json> = { variations: weights.map((weight) => ({ variation: g.int(variations), weight })) };
  if (g.chance(0.7)) r['contextKind'] = g.pick([...KINDS]);
  if (g.chance(0.5)) r['bucketBy'] = r['contextKind'] === undefined ? g.pick(['plan', 'key']) : g.pick(['plan', '/address/city', 'key', 'size']);
  if (g.chance(0.3)) r['seed'] = g.pick([61, 777]);
  return r;
}

/** Weights out of exactly 100000, as LaunchDarkly writes them. */
function relativeSplit(g: Gen, n: number): number[] {
  const raw = Array.from({ length: n }, () => 1 + g.int(100));
  const total = raw.reduce((a, b) => a + b, 0);
  const out = raw.map((w) => Math.floor((w / total) * 100_000));
  out[n - 1] = 100_000 - out.slice(0, -1).reduce((a, b) => a + b, 0);
  return out;
}

/** Segments named in order: each may nest only earlier ones (no cycle), except the deliberate pair. */
function makeSegments(g: Gen, count: number): LdFlag[] {
  const segments: LdFlag[] = [];
  for (let i = 0; i < count; i++) {
    const key = `seg-${i}`;
    const seg: LdFlag = { key, version: 1 };
    if (g.chance(0.5)) seg['included'] = g.some(KEYS_OF['user'] as string[], 2);
    if (g.chance(0.4)) seg['excluded'] = g.some(KEYS_OF['user'] as string[], 2);
    if (g.chance(0.5)) seg['includedContexts'] = [{ contextKind: g.pick(['organization', 'device']), values: g.some(['acme', 'globex', 'd-1', 'shared'], 2) }];
    if (g.chance(0.4)) seg['excludedContexts'] = [{ contextKind: g.pick([...KINDS]), values: g.some(['initech', 'd-2', 'shared', 'bob'], 2) }];
    if (g.chance(0.6)) seg['salt'] = `s${i}`;
    const earlier = segments.map((s) => s['key'] as string);
    seg['rules'] = Array.from({ length: g.int(3) }, (_, r) => {
      const rule: Record<string, Json> = { id: `${key}-r${r}`, clauses: Array.from({ length: g.int(3) }, () => kindClause(g, earlier)) };
      if (g.chance(0.5)) {
        rule['weight'] = g.pick([0, 25_000, 50_000, 90_000, 100_000]);
        if (g.chance(0.6)) rule['rolloutContextKind'] = g.pick([...KINDS]);
        if (g.chance(0.5)) rule['bucketBy'] = rule['rolloutContextKind'] === undefined ? 'plan' : g.pick(['/address/city', 'plan', 'key']);
      }
      return rule as Json;
    });
    segments.push(seg);
  }
  // A cycle, as LaunchDarkly's data can hold one mid-update: both answer MALFORMED_FLAG.
  segments.push({ key: 'cycle-a', version: 1, rules: [{ id: 'ca', clauses: [{ attribute: '', op: 'segmentMatch', values: ['cycle-b'] }] }] });
  segments.push({ key: 'cycle-b', version: 1, included: ['carol'], rules: [{ id: 'cb', clauses: [{ attribute: '', op: 'segmentMatch', values: ['cycle-a'] }] }] });
  return segments;
}

function makeKindFlag(g: Gen, index: number, segmentKeys: readonly string[]): LdFlag {
  const values: Json[] = ['a', 'b', 'c', 'd'].slice(0, 2 + g.int(3));
  const n = values.length;
  const served = (): Record<string, Json> => (g.chance(0.5) ? { variation: g.int(n) } : { rollout: kindRollout(g, n) });
  const flag: LdFlag = { key: `kinds-${index}`, version: 1, on: g.chance(0.9), variations: values, offVariation: g.int(n), fallthrough: served() };
  if (g.chance(0.6)) flag['salt'] = `k${index}`;
  if (g.chance(0.5)) flag['targets'] = Array.from({ length: 1 + g.int(2) }, (_, i) => ({ values: g.some(KEYS_OF['user'] as string[], 2), variation: i % n }));
  if (g.chance(0.5)) {
    flag['contextTargets'] = Array.from({ length: 1 + g.int(3) }, () => {
      const kind = g.pick([...KINDS]);
      return { contextKind: kind, variation: g.int(n), values: kind === 'user' ? [] : g.some(KEYS_OF[kind] as string[], 2) };
    });
  }
  const rules = Array.from({ length: g.int(4) }, () => Array.from({ length: 1 + g.int(2) }, () => kindClause(g, segmentKeys)));
  // A rule whose only clause reaches the segment cycle. Only clause: when more clauses follow an
  // erring one, Node's SDK lets the next clause's answer replace the error (its Go and Java SDKs stop
  // at the error, as we do), so that case is left out.
  if (g.chance(0.1)) rules.splice(g.int(rules.length + 1), 0, [{ attribute: '', op: 'segmentMatch', values: [g.pick(['cycle-a', 'cycle-b'])] }]);
  flag['rules'] = rules.map((clauses, i) => ({ id: `rule-${i}`, clauses, ...served() }) as Json);
  return flag;
}

/** What the management API stores for an imported flag, as the evaluator reads it. */
function definitionOfImported(f: ImportedFlag): FlagDefinition {
  const def: FlagDefinition = { key: f.key, type: f.type, defaultValue: f.defaultValue, variations: f.variations, enabled: f.enabled, targets: f.targets, rules: f.rules, prerequisites: f.prerequisites, salt: f.salt };
  if (f.offValue !== null) def.offValue = f.offValue;
  return def;
}

const KIND_FLAGS = Number(process.env['ORACLE_KIND_FLAGS'] ?? 150);
const KIND_CONTEXTS = Number(process.env['ORACLE_KIND_CONTEXTS'] ?? 30);

describe('LaunchDarkly Node SDK as oracle: context kinds, multi-kind contexts and segments, through the import conversion', () => {
  const g = new Gen(seededRandom(SEED + 33));
  const segments = makeSegments(g, 12);
  // The cycle is named alone in a rule of its own (see makeKindFlag), not by the random clauses.
  const segmentKeys = segments.map((s) => s['key'] as string).filter((k) => !k.startsWith('cycle-'));
  const flags = Array.from({ length: KIND_FLAGS }, (_, i) => makeKindFlag(g, i, segmentKeys));
  const contexts = Array.from({ length: KIND_CONTEXTS }, (_, i) => makeKindContext(g, i));
  let client: LDClient;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ld-oracle-kinds-'));
    client = await offlineClient(dir, flags, segments);
  });
  afterAll(() => {
    client?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it(`${KIND_FLAGS} flags and ${segments.length} segments x ${KIND_CONTEXTS} contexts: the same value, variation and reason`, async () => {
    const parsed = parseLaunchDarklyData({ flags: Object.fromEntries(flags.map((fl) => [fl['key'], fl])), segments: Object.fromEntries(segments.map((s) => [s['key'], s])) });
    expect(parsed.errors).toEqual({});
    // The import refuses a segmentMatch naming no segment; told every segment exists, it passes such
    // clauses on, so the evaluator's answer for a missing segment (no match, as LaunchDarkly) is compared too.
    const anySegment = (): boolean => true;
    const mappedSegments = mapLaunchDarklySegments(parsed.segments, anySegment);
    let n = 0;
    const mapped = mapLaunchDarklyFlags(parsed.flags, () => undefined, () => `v${n++}`, anySegment);
    expect([mappedSegments.errors, mapped.errors]).toEqual([{}, {}]);
    const set = CompiledFlagSet.compile(mapped.flags.map(definitionOfImported), mappedSegments.segments);
    const byKey = new Map(mapped.flags.map((f) => [f.key, f]));

    const mismatches: string[] = [];
    const reasons = new Map<string, number>();
    const seen = { multi: 0, segmentMatched: 0, errors: 0 };
    for (const fl of flags) {
      const key = fl['key'] as string;
      const mine = byKey.get(key)!;
      for (const ctx of contexts) {
        const ld = await client.variationDetail(key, ctx, 'caller-default');
        const res = set.evaluate(key, ctx)!;
        reasons.set(ld.reason.kind, (reasons.get(ld.reason.kind) ?? 0) + 1);
        if (ctx.kind === 'multi') seen.multi++;
        const index = res.variationId === undefined ? null : mine.variations.findIndex((v) => v.id === res.variationId);
        let same: boolean;
        if (ld.reason.kind === 'ERROR') {
          // A segment cycle: both refuse to evaluate; LaunchDarkly serves the caller's default, we the flag's.
          seen.errors++;
          same = res.reason === 'ERROR' && res.errorKind === ld.reason.errorKind;
        } else {
          const expected =
            ld.reason.kind === 'FALLTHROUGH' ? { reason: 'FALLTHROUGH', ruleId: undefined, ruleIndex: undefined } : ld.reason.kind === 'RULE_MATCH' ? { reason: 'RULE_MATCH', ruleId: ld.reason.ruleId, ruleIndex: ld.reason.ruleIndex } : { reason: ld.reason.kind };
          same = JSON.stringify(res.value) === JSON.stringify(ld.value) && index === ld.variationIndex && Object.entries(expected).every(([k, v]) => (res as unknown as Record<string, unknown>)[k] === v);
          if (ld.reason.kind === 'RULE_MATCH' && JSON.stringify(fl['rules']).includes('segmentMatch')) seen.segmentMatched++;
        }
        if (!same) mismatches.push(`${key} ${JSON.stringify(ctx)}: LaunchDarkly ${JSON.stringify(ld)} vs ours ${JSON.stringify(res)} (index ${index})`);
      }
    }
    expect(mismatches.slice(0, 5)).toEqual([]);
    // The generator reaches every outcome, multi-kind contexts, segment matches and the cycle.
    for (const kind of ['OFF', 'FALLTHROUGH', 'TARGET_MATCH', 'RULE_MATCH', 'ERROR']) expect([kind, (reasons.get(kind) ?? 0) > 0]).toEqual([kind, true]);
    expect(seen.multi).toBeGreaterThan(0);
    expect(seen.segmentMatched).toBeGreaterThan(0);
  }, 120_000);
});

// ---------------------------------------------------------------------------------------------
// The same data through every door: import, the seed's evaluate route, the in-process provider

/**
 * LaunchDarkly data with kinds, contextTargets and segments as a team brings it: what the import
 * refuses by design taken out (a segmentMatch naming no segment, the deliberate segment cycle), the
 * rest generated as above.
 */
function importableKindData(g: Gen, flagCount: number): { flags: LdFlag[]; segments: LdFlag[] } {
  const segments = makeSegments(g, 10).filter((s) => !(s['key'] as string).startsWith('cycle-'));
  const known = new Set(segments.map((s) => s['key'] as string));
  const flags = Array.from({ length: flagCount }, (_, i) => makeKindFlag(g, i, [...known]));
  const keepKnown = (rules: Json | undefined): Json[] =>
    ((rules ?? []) as Array<Record<string, Json>>).map((r) => ({
      ...r,
      clauses: (r['clauses'] as Array<Record<string, Json>>).flatMap((c) => {
        if (c['op'] !== 'segmentMatch') return [c];
        const values = (c['values'] as string[]).filter((v) => known.has(v));
        return values.length > 0 ? [{ ...c, values }] : [];
      }),
    }));
  for (const fl of flags) fl['rules'] = keepKnown(fl['rules']);
  for (const seg of segments) seg['rules'] = keepKnown(seg['rules']);
  return { flags, segments };
}

/** A LaunchDarkly context as OpenFeature's flat context: `targetingKey` for the key, one nested object per kind of a multi-kind one. */
function openFeatureContextOf(ctx: Record<string, unknown>): OpenFeatureContext {
  const flat = ({ key, ...rest }: Record<string, unknown>) => ({ targetingKey: key, ...rest }) as OpenFeatureContext;
  if (ctx['kind'] !== 'multi') return flat(ctx);
  const out: OpenFeatureContext = { kind: 'multi' };
  for (const [kind, part] of Object.entries(ctx)) if (kind !== 'kind') out[kind] = flat(part as Record<string, unknown>);
  return out;
}

const SAME_FLAGS = Number(process.env['ORACLE_SAME_FLAGS'] ?? 60);
const SAME_CONTEXTS = Number(process.env['ORACLE_SAME_CONTEXTS'] ?? 24);

describe('the same answers everywhere: LaunchDarkly data with kinds and segments imported, evaluated by the seed\'s route, the in-process provider, our evaluator and LaunchDarkly\'s SDK', () => {
  const g = new Gen(seededRandom(SEED + 34));
  const { flags, segments } = importableKindData(g, SAME_FLAGS);
  const contexts = Array.from({ length: SAME_CONTEXTS }, (_, i) => makeKindContext(g, i));
  // The seed's evaluate route takes a user (`userId` and attributes): user contexts of their own.
  const users = Array.from({ length: 12 }, (_, i) => ({ kind: 'user', ...kindAttributes(g, 'user', i) }) as LDContext & Record<string, unknown>);
  let f: ManagementApiFixture;
  let owner: SignedUp;
  let ldClient: LDClient;
  let dir: string;
  let imported: HttpResult<any>;
  /** Our evaluator over the import's own conversion of the same data (variation ids of its own: compared by index). */
  let reference: { set: CompiledFlagSet; indexOf: (key: string, id: string | undefined) => number | null };
  /** Index of a variation id in the flag as the import stored it. */
  let storedIndex: (key: string, id: string | undefined) => number | null;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ld-same-answers-'));
    ldClient = await offlineClient(dir, flags, segments);
    const data = { flags: Object.fromEntries(flags.map((fl) => [fl['key'], fl])), segments: Object.fromEntries(segments.map((s) => [s['key'], s])) };
    const parsed = parseLaunchDarklyData(data);
    const mappedSegments = mapLaunchDarklySegments(parsed.segments, (k) => parsed.segments.has(k));
    let n = 0;
    const mapped = mapLaunchDarklyFlags(parsed.flags, () => undefined, () => `v${n++}`, (k) => parsed.segments.has(k));
    expect([parsed.errors, mappedSegments.errors, mapped.errors]).toEqual([{}, {}, {}]);
    const ids = new Map(mapped.flags.map((fl) => [fl.key, fl.variations.map((v) => v.id)]));
    reference = {
      set: CompiledFlagSet.compile(mapped.flags.map(definitionOfImported), mappedSegments.segments),
      indexOf: (key, id) => (id === undefined ? null : ids.get(key)!.indexOf(id)),
    };

    f = await ManagementApiFixture.start({ RATE_LIMIT_FREE: '1000000' });
    owner = await f.signUp();
    imported = await f.call('POST', '/api/flags/import', { token: owner.idToken, tenant: owner.tenantId, json: data });
    const stored = new Map<string, string[]>((imported.body.flags ?? []).map((fl: { key: string; variations: Array<{ id: string }> }) => [fl.key, fl.variations.map((v) => v.id)]));
    storedIndex = (key, id) => (id === undefined ? null : stored.get(key)!.indexOf(id));
  }, 60_000);
  afterAll(async () => {
    ldClient?.close();
    await OpenFeature.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
    await f?.stop();
  });

  /** What is compared of an answer: value, variation index, reason with its rule. */
  const answerOf = (r: { value: unknown; reason: string; ruleId?: string; ruleIndex?: number }, index: number | null) => ({
    value: r.value,
    index,
    reason: r.reason,
    ruleId: r.reason === 'RULE_MATCH' ? r.ruleId : undefined,
    ruleIndex: r.reason === 'RULE_MATCH' ? r.ruleIndex : undefined,
  });
  const ours = (key: string, ctx: Record<string, unknown>): EvaluationResult => reference.set.evaluate(key, ctx)!;

  it('imports the flags and segments in one request, and our evaluator answers as LaunchDarkly\'s SDK on the same data', async () => {
    expect([imported.status, imported.status === 200 ? '' : imported.text]).toEqual([200, '']);
    expect([imported.body.created.length, imported.body.segments.created.length]).toEqual([flags.length, segments.length]);
    const mismatches: string[] = [];
    const reasons = new Set<string>();
    let segmentMatched = 0;
    for (const fl of flags) {
      const key = fl['key'] as string;
      for (const ctx of [...contexts, ...users]) {
        const ld = await ldClient.variationDetail(key, ctx, 'caller-default');
        const mine = ours(key, ctx);
        reasons.add(ld.reason.kind);
        const expected = { value: ld.value, index: ld.variationIndex ?? null, reason: ld.reason.kind, ruleId: ld.reason.ruleId, ruleIndex: ld.reason.ruleIndex };
        const got = answerOf(mine, reference.indexOf(key, mine.variationId));
        if (JSON.stringify(got) !== JSON.stringify(expected)) mismatches.push(`${key} ${JSON.stringify(ctx)}: LaunchDarkly ${JSON.stringify(expected)} vs ours ${JSON.stringify(got)}`);
        if (mine.reason === 'RULE_MATCH' && JSON.stringify((fl['rules'] as Json[])[mine.ruleIndex!]).includes('segmentMatch')) segmentMatched++;
      }
    }
    expect(mismatches.slice(0, 5)).toEqual([]);
    for (const kind of ['OFF', 'FALLTHROUGH', 'TARGET_MATCH', 'RULE_MATCH']) expect([kind, reasons.has(kind)]).toEqual([kind, true]);
    expect(segmentMatched).toBeGreaterThan(0);
  });

  it('the seed\'s evaluate route gives every user context the same answer as our evaluator', async () => {
    const mismatches: string[] = [];
    for (const fl of flags) {
      const key = fl['key'] as string;
      for (const ctx of users) {
        const { kind: _kind, key: userId, ...attributes } = ctx;
        const res = await f.call('POST', `/api/flags/${key}/evaluate`, { token: owner.idToken, tenant: owner.tenantId, json: { userId, attributes } });
        const mine = ours(key, ctx);
        const got = res.status === 200 ? answerOf(res.body, storedIndex(key, res.body.variationId)) : { status: res.status, body: res.text };
        const expected = answerOf(mine, reference.indexOf(key, mine.variationId));
        if (JSON.stringify(got) !== JSON.stringify(expected)) mismatches.push(`${key} ${JSON.stringify(ctx)}: route ${JSON.stringify(got)} vs evaluator ${JSON.stringify(expected)}`);
      }
    }
    expect(mismatches.slice(0, 5)).toEqual([]);
  }, 60_000);

  it('the in-process provider (OpenFeature\'s flat contexts, multi-kind included) gives every context the same answer as our evaluator', async () => {
    const auth = await f.call('POST', '/api/oauth/clients', { token: owner.idToken, tenant: owner.tenantId, json: { name: 'same answers', scopes: ['flags:read'] } });
    expect(auth.status).toBe(201);
    await OpenFeature.setProviderAndWait('same-answers', new FlagshipInProcessProvider({ baseUrl: f.url, auth: { clientId: auth.body.clientId, clientSecret: auth.body.clientSecret } }));
    const client = OpenFeature.getClient('same-answers');
    const mismatches: string[] = [];
    let multi = 0;
    for (const fl of flags) {
      const key = fl['key'] as string;
      for (const ctx of [...contexts, ...users]) {
        const d = await client.getStringDetails(key, 'caller-default', openFeatureContextOf(ctx));
        const mine = ours(key, ctx);
        if (ctx.kind === 'multi') multi++;
        const got = { value: d.value, index: storedIndex(key, d.variant), reason: d.reason, ruleId: d.flagMetadata['ruleId'], errorCode: d.errorCode };
        const expected = { value: mine.value, index: reference.indexOf(key, mine.variationId), reason: openFeatureReason(mine), ruleId: mine.ruleId, errorCode: undefined };
        if (JSON.stringify(got) !== JSON.stringify(expected)) mismatches.push(`${key} ${JSON.stringify(ctx)}: provider ${JSON.stringify(got)} vs evaluator ${JSON.stringify(expected)}`);
      }
    }
    expect(mismatches.slice(0, 5)).toEqual([]);
    expect(multi).toBeGreaterThan(0);
  });
});
