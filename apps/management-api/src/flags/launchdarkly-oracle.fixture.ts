import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { basicLogger, FileDataSourceFactory, init, type LDClient, type LDContext, type LDEvaluationDetail } from '@launchdarkly/node-server-sdk';
import type { EvaluationContext as OpenFeatureContext } from '@openfeature/server-sdk';
import { CompiledFlagSet, type FlagDefinition } from '@flagship/flag-evaluation';
import { seededRandom } from '@flagship/testing';
import { type ImportedFlag, mapLaunchDarklyFlags, mapLaunchDarklySegments, parseLaunchDarklyData } from './launchdarkly-import';

/**
 * The LaunchDarkly oracle's generators, shared by launchdarkly-oracle.int-spec.ts and
 * launchdarkly-same-answers.e2e-spec.ts so that both evaluate the very same data: seeded random flags,
 * segments and contexts of several kinds in LaunchDarkly's SDK data format, LaunchDarkly's Node SDK
 * reading them offline, and the mappings from their shapes to ours.
 */
export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

export class Gen {
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

export type LdFlag = Record<string, Json>;

/** The SDK reading the same SDK data file a LaunchDarkly user would export (flags and segments); no network at all. */
export async function offlineClient(dir: string, flags: LdFlag[], segments: LdFlag[]): Promise<LDClient> {
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

const KINDS = ['user', 'organization', 'device'] as const;
const KEYS_OF: Record<string, string[]> = {
  user: ['alice', 'bob', 'carol', 'dave', 'shared'],
  organization: ['acme', 'globex', 'initech', 'shared'],
  device: ['d-1', 'd-2', 'd-3', 'shared'],
};
const PLANS = ['free', 'pro', 'enterprise'];
const CITIES = ['Oslo', 'Paris', 'Lyon'];

/** The attributes of one kind's context: plan, size, address (for references), tags, anonymous. */
export function kindAttributes(g: Gen, kind: string, i: number): Record<string, unknown> {
  const keys = KEYS_OF[kind] as string[];
  const out: Record<string, unknown> = { key: i < keys.length * 2 ? g.pick(keys) : `${kind}-${i}-${g.int(1000)}` };
  if (g.chance(0.8)) out['plan'] = g.pick(PLANS);
  if (g.chance(0.7)) out['size'] = g.pick([1, 10, 250, 5000]);
  if (g.chance(0.6)) out['address'] = { city: g.pick(CITIES) };
  if (g.chance(0.5)) out['tags'] = g.some(['beta', 'vip', 'eu'], 2);
  if (g.chance(0.2)) out['anonymous'] = g.pick([true, false]);
  return out;
}

export function makeKindContext(g: Gen, i: number): LDContext & Record<string, unknown> {
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
export function makeSegments(g: Gen, count: number): LdFlag[] {
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

export function makeKindFlag(g: Gen, index: number, segmentKeys: readonly string[]): LdFlag {
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
export function definitionOfImported(f: ImportedFlag): FlagDefinition {
  const def: FlagDefinition = { key: f.key, type: f.type, defaultValue: f.defaultValue, variations: f.variations, enabled: f.enabled, targets: f.targets, rules: f.rules, prerequisites: f.prerequisites, salt: f.salt };
  if (f.offValue !== null) def.offValue = f.offValue;
  return def;
}

/**
 * LaunchDarkly data with kinds, contextTargets and segments as a team brings it: what the import
 * refuses by design taken out (a segmentMatch naming no segment, the deliberate segment cycle), the
 * rest generated as above.
 */
export function importableKindData(g: Gen, flagCount: number): { flags: LdFlag[]; segments: LdFlag[] } {
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
export function openFeatureContextOf(ctx: Record<string, unknown>): OpenFeatureContext {
  const flat = ({ key, ...rest }: Record<string, unknown>) => ({ targetingKey: key, ...rest }) as OpenFeatureContext;
  if (ctx['kind'] !== 'multi') return flat(ctx);
  const out: OpenFeatureContext = { kind: 'multi' };
  for (const [kind, part] of Object.entries(ctx)) if (kind !== 'kind') out[kind] = flat(part as Record<string, unknown>);
  return out;
}

/** Issue 33's "same answers" data set: the int-spec and the OFREP e2e-spec evaluate the very same one. */
export const SAME_ANSWERS = {
  seed: Number(process.env['ORACLE_SEED'] ?? 20261122) + 34,
  flags: Number(process.env['ORACLE_SAME_FLAGS'] ?? 60),
  contexts: Number(process.env['ORACLE_SAME_CONTEXTS'] ?? 24),
};

/** One generated data set, the same wherever it is built from the same numbers. */
export interface SameAnswersData {
  flags: LdFlag[];
  segments: LdFlag[];
  /** Contexts of every shape: single-kind of three kinds and multi-kind. */
  contexts: Array<LDContext & Record<string, unknown>>;
  /** User contexts of their own, for the evaluate route's `userId` and `attributes`. */
  users: Array<LDContext & Record<string, unknown>>;
  /** The body of POST /api/flags/import (LaunchDarkly's SDK data format). */
  body: { flags: Record<string, LdFlag>; segments: Record<string, LdFlag> };
  /** Our evaluator over the import's own conversion (variation ids of its own: compare by index). */
  reference: { set: CompiledFlagSet; indexOf: (key: string, id: string | undefined) => number | null; errors: unknown[] };
}

/** Issue 33's "same answers" data: importable flags with kinds, contextTargets and segments, and contexts. */
export function sameAnswersData(seed: number, flagCount: number, contextCount: number): SameAnswersData {
  const g = new Gen(seededRandom(seed));
  const { flags, segments } = importableKindData(g, flagCount);
  const contexts = Array.from({ length: contextCount }, (_, i) => makeKindContext(g, i));
  const users = Array.from({ length: 12 }, (_, i) => ({ kind: 'user', ...kindAttributes(g, 'user', i) }) as LDContext & Record<string, unknown>);
  const body = { flags: Object.fromEntries(flags.map((fl) => [fl['key'] as string, fl])), segments: Object.fromEntries(segments.map((s) => [s['key'] as string, s])) };
  const parsed = parseLaunchDarklyData(body);
  const mappedSegments = mapLaunchDarklySegments(parsed.segments, (k) => parsed.segments.has(k));
  let n = 0;
  const mapped = mapLaunchDarklyFlags(parsed.flags, () => undefined, () => `v${n++}`, (k) => parsed.segments.has(k));
  const ids = new Map(mapped.flags.map((fl) => [fl.key, fl.variations.map((v) => v.id)]));
  const reference = {
    set: CompiledFlagSet.compile(mapped.flags.map(definitionOfImported), mappedSegments.segments),
    indexOf: (key: string, id: string | undefined) => (id === undefined ? null : ids.get(key)!.indexOf(id)),
    errors: [parsed.errors, mappedSegments.errors, mapped.errors],
  };
  return { flags, segments, contexts, users, body, reference };
}

/** What is compared of an answer: value, variation index, reason, and the rule of a RULE_MATCH. */
export interface ComparedAnswer {
  value: unknown;
  index: number | null;
  reason: string;
  ruleId: string | undefined;
  ruleIndex: number | undefined;
}

/** LaunchDarkly's answer as compared. */
export function ldAnswer(ld: LDEvaluationDetail): ComparedAnswer {
  return { value: ld.value, index: ld.variationIndex ?? null, reason: ld.reason.kind, ruleId: ld.reason.ruleId, ruleIndex: ld.reason.ruleIndex };
}

/**
 * OpenFeature's reason for LaunchDarkly's answer, as openFeatureReason maps ours: what a percentage
 * rollout served (the matched rule's or the fallthrough's) is SPLIT, read off the LaunchDarkly flag
 * itself so that the mapping is checked, not repeated.
 */
export function openFeatureReasonOfLd(ld: LDEvaluationDetail, flag: LdFlag): string {
  const rollout = (served: Json | undefined) => served !== null && typeof served === 'object' && !Array.isArray(served) && served['rollout'] !== undefined;
  switch (ld.reason.kind) {
    case 'OFF':
      return 'DISABLED';
    case 'TARGET_MATCH':
      return 'TARGETING_MATCH';
    case 'RULE_MATCH':
      return rollout((flag['rules'] as Json[])[ld.reason.ruleIndex!]) ? 'SPLIT' : 'TARGETING_MATCH';
    case 'FALLTHROUGH':
      return rollout(flag['fallthrough']) ? 'SPLIT' : 'DEFAULT';
    default:
      return ld.reason.kind;
  }
}

/** What a door answered, and what LaunchDarkly did, for one (flag, context). */
export interface DoorAnswer {
  got: unknown;
  expected: unknown;
  /** The reason counted as reached, in the door's vocabulary. */
  reason: string;
}

/**
 * Every (flag, context) of `data` (its contexts and its users) through one door, six requests in
 * flight as callers send them (one at a time, 2,000-odd HTTP calls would be most of a file's time):
 * the pairs whose answers differ (the first five), how many were compared, and what was reached.
 */
export async function compareEveryPair(
  data: Pick<SameAnswersData, 'flags' | 'contexts' | 'users'>,
  ldClient: LDClient,
  door: (flag: LdFlag, ctx: LDContext & Record<string, unknown>, ld: LDEvaluationDetail) => Promise<DoorAnswer>,
): Promise<{ mismatches: string[]; compared: number; kinds: string[]; multi: boolean; reasons: string[] }> {
  const pairs = data.flags.flatMap((fl) => [...data.contexts, ...data.users].map((ctx) => ({ fl, ctx })));
  const mismatches: string[] = [];
  const kinds = new Set<string>();
  const reasons = new Set<string>();
  let compared = 0;
  const worker = async (): Promise<void> => {
    for (let pair = pairs.pop(); pair !== undefined; pair = pairs.pop()) {
      const { fl, ctx } = pair;
      const ld = await ldClient.variationDetail(fl['key'] as string, ctx, 'caller-default');
      const { got, expected, reason } = await door(fl, ctx, ld);
      if (JSON.stringify(got) !== JSON.stringify(expected)) mismatches.push(`${fl['key'] as string} ${JSON.stringify(ctx)}: ${JSON.stringify(got)} vs LaunchDarkly ${JSON.stringify(expected)}`);
      kinds.add(ctx.kind as string);
      reasons.add(reason);
      compared++;
    }
  };
  await Promise.all(Array.from({ length: 6 }, worker));
  return { mismatches: mismatches.slice(0, 5), compared, kinds: [...kinds].sort(), multi: kinds.has('multi'), reasons: [...reasons].sort() };
}

/** compareEveryPair's result when a door agrees everywhere and the data reached every kind and `reasons`. */
export function agreedEverywhere(data: Pick<SameAnswersData, 'flags' | 'contexts' | 'users'>, reasons: string[]): Awaited<ReturnType<typeof compareEveryPair>> {
  return { mismatches: [], compared: data.flags.length * (data.contexts.length + data.users.length), kinds: ['device', 'multi', 'organization', 'user'], multi: true, reasons: [...reasons].sort() };
}
