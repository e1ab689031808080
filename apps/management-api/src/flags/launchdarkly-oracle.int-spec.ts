import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LDClient, LDContext } from '@launchdarkly/node-server-sdk';
import { OpenFeature } from '@openfeature/server-sdk';
import { CompiledFlagSet, type EvaluationResult, openFeatureReason } from '@flagship/flag-evaluation';
import { FlagshipInProcessProvider } from '@flagship/sdk';
import { type HttpResult, seededRandom } from '@flagship/testing';
import { ManagementApiFixture, type SignedUp } from '../testing/management-api.fixture';
import { mapLaunchDarklyFlags, mapLaunchDarklySegments, parseLaunchDarklyData } from './launchdarkly-import';
import {
  type ComparedAnswer,
  definitionOfImported,
  Gen,
  type Json,
  type LdFlag,
  ldAnswer,
  makeKindContext,
  makeKindFlag,
  makeSegments,
  offlineClient,
  openFeatureContextOf,
  SAME_ANSWERS,
  sameAnswersData,
  agreedEverywhere,
  compareEveryPair,
} from './launchdarkly-oracle.fixture';

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
 * evaluated by the seed's evaluate route (every context, multi-kind included, as its `context` field;
 * user contexts also as `userId` and `attributes`), by the in-process OpenFeature provider (every
 * context, multi-kind ones as OpenFeature's flat context), by our evaluator over the import's
 * conversion and by LaunchDarkly's SDK: the same value, variation and reason. OFREP on orep-server
 * answers the same data in launchdarkly-same-answers.e2e-spec.ts (it starts the built app); the
 * generators are shared through launchdarkly-oracle.fixture.ts.
 */

const FLAGS = Number(process.env['ORACLE_FLAGS'] ?? 300);
// 300 x 12 = 3600 evaluations through real HTTP: about a minute on a busy 2-core machine.
const CONTEXTS = Number(process.env['ORACLE_CONTEXTS'] ?? 12);
const SEED = Number(process.env['ORACLE_SEED'] ?? 20261122);



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
// (OFREP on orep-server: launchdarkly-same-answers.e2e-spec.ts, on the same data)

describe('the same answers everywhere: LaunchDarkly data with kinds and segments imported, evaluated by the seed\'s route, the in-process provider, our evaluator and LaunchDarkly\'s SDK', () => {
  const { flags, segments, contexts, users, body, reference } = sameAnswersData(SAME_ANSWERS.seed, SAME_ANSWERS.flags, SAME_ANSWERS.contexts);
  let f: ManagementApiFixture;
  let owner: SignedUp;
  let ldClient: LDClient;
  let dir: string;
  let imported: HttpResult<any>;
  /** Index of a variation id in the flag as the import stored it. */
  let storedIndex: (key: string, id: string | undefined) => number | null;

  beforeAll(async () => {
    expect(reference.errors).toEqual([{}, {}, {}]);
    dir = mkdtempSync(join(tmpdir(), 'ld-same-answers-'));
    ldClient = await offlineClient(dir, flags, segments);
    f = await ManagementApiFixture.start({ RATE_LIMIT_FREE: '1000000' });
    owner = await f.signUp();
    imported = await f.call('POST', '/api/flags/import', { token: owner.idToken, tenant: owner.tenantId, json: body });
    const stored = new Map<string, string[]>((imported.body.flags ?? []).map((fl: { key: string; variations: Array<{ id: string }> }) => [fl.key, fl.variations.map((v) => v.id)]));
    storedIndex = (key, id) => (id === undefined ? null : stored.get(key)!.indexOf(id));
  }, 60_000);
  afterAll(async () => {
    ldClient?.close();
    await OpenFeature.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
    await f?.stop();
  });

  const answerOf = (r: { value: unknown; reason: string; ruleId?: string; ruleIndex?: number }, index: number | null): ComparedAnswer => ({
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
        const expected = ldAnswer(ld);
        const got = answerOf(mine, reference.indexOf(key, mine.variationId));
        if (JSON.stringify(got) !== JSON.stringify(expected)) mismatches.push(`${key} ${JSON.stringify(ctx)}: LaunchDarkly ${JSON.stringify(expected)} vs ours ${JSON.stringify(got)}`);
        if (mine.reason === 'RULE_MATCH' && JSON.stringify((fl['rules'] as Json[])[mine.ruleIndex!]).includes('segmentMatch')) segmentMatched++;
      }
    }
    expect(mismatches.slice(0, 5)).toEqual([]);
    for (const kind of ['OFF', 'FALLTHROUGH', 'TARGET_MATCH', 'RULE_MATCH']) expect([kind, reasons.has(kind)]).toEqual([kind, true]);
    expect(segmentMatched).toBeGreaterThan(0);
  });

  it('the seed\'s evaluate route gives every user, as userId and attributes, the same answer as our evaluator', async () => {
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

  it('the seed\'s evaluate route, given `context`, gives every context (multi-kind included) LaunchDarkly\'s answer', async () => {
    const result = await compareEveryPair({ flags, contexts, users }, ldClient, async (fl, ctx, ld) => {
      const key = fl['key'] as string;
      const res = await f.call('POST', `/api/flags/${key}/evaluate`, { token: owner.idToken, tenant: owner.tenantId, json: { context: ctx } });
      const got = res.status === 200 ? answerOf(res.body, storedIndex(key, res.body.variationId)) : { status: res.status, body: res.text };
      return { got, expected: ldAnswer(ld), reason: ld.reason.kind };
    });
    expect(result).toEqual(agreedEverywhere({ flags, contexts, users }, ['FALLTHROUGH', 'OFF', 'RULE_MATCH', 'TARGET_MATCH']));
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
