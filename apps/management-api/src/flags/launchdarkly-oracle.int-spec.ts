import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { basicLogger, FileDataSourceFactory, init, type LDClient, type LDContext } from '@launchdarkly/node-server-sdk';
import { type HttpResult, seededRandom } from '@flagship/testing';
import { ManagementApiFixture, type SignedUp } from '../testing/management-api.fixture';

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

    // The SDK reads the same SDK data file a LaunchDarkly user would export; no network at all.
    dir = mkdtempSync(join(tmpdir(), 'ld-oracle-'));
    const file = join(dir, 'flags.json');
    writeFileSync(file, JSON.stringify({ flags: Object.fromEntries(flags.map((fl) => [fl['key'], fl])), segments: {} }));
    client = init('sdk-oracle-offline', {
      updateProcessor: new FileDataSourceFactory({ paths: [file] }).getFactory(),
      sendEvents: false,
      diagnosticOptOut: true,
      logger: basicLogger({ level: 'none' }),
    });
    await client.waitForInitialization({ timeout: 10 });

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
