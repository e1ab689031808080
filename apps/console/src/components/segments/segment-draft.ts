import { USER_KIND, type Segment, type SegmentTarget } from '../../api';
import type { SegmentDraft } from '../targeting/checks';
import { sameJson } from '../targeting/draft';

export const SEGMENT_FIELDS = ['name', 'description', 'included', 'excluded', 'includedContexts', 'excludedContexts', 'rules'] as const;
export type SegmentField = (typeof SEGMENT_FIELDS)[number];

export const SEGMENT_FIELD_LABELS: Record<SegmentField, string> = {
  name: 'Name',
  description: 'Description',
  included: 'Included user keys',
  excluded: 'Excluded user keys',
  includedContexts: 'Included keys of other kinds',
  excludedContexts: 'Excluded keys of other kinds',
  rules: 'Rules',
};

/** LaunchDarkly's absolute weight: 100000 is every matching context. */
export const SEGMENT_WEIGHT_TOTAL = 100_000;
/** The weight as the percentage shown (3 decimals: the weight's whole resolution). */
export const weightToPercent = (w: number): number => Math.round(w) / 1000;
export const percentToWeight = (p: number): number => Math.min(SEGMENT_WEIGHT_TOTAL, Math.max(0, Math.round(p * 1000)));

export function segmentDraftOf(s: Segment): SegmentDraft {
  const d = {} as Record<SegmentField, unknown>;
  for (const f of SEGMENT_FIELDS) d[f] = structuredClone(s[f]);
  return d as SegmentDraft;
}

/** The fields of `draft` that differ from `base`: a PATCH body (a list is replaced whole). */
export function changedSegmentFields(base: SegmentDraft, draft: SegmentDraft): Partial<SegmentDraft> {
  const out: Record<string, unknown> = {};
  for (const f of SEGMENT_FIELDS) if (!sameJson(base[f], draft[f])) out[f] = draft[f];
  return out as Partial<SegmentDraft>;
}

/** The user's edits (base -> draft) applied on the server's newer version; `conflicts`: fields both changed, differently. */
export function rebaseSegment(base: SegmentDraft, draft: SegmentDraft, server: Segment): { draft: SegmentDraft; conflicts: SegmentField[] } {
  const next = segmentDraftOf(server);
  const conflicts: SegmentField[] = [];
  for (const f of Object.keys(changedSegmentFields(base, draft)) as SegmentField[]) {
    if (!sameJson(base[f], server[f]) && !sameJson(server[f], draft[f])) conflicts.push(f);
    (next as Record<string, unknown>)[f] = structuredClone(draft[f]);
  }
  return { draft: next, conflicts };
}

/**
 * Included and excluded keys by kind, as the editor shows them: one row per kind, user first (its keys
 * are `included`/`excluded`, LaunchDarkly's fields for user keys), then each other kind once
 * (`includedContexts`/`excludedContexts`, merged when the API holds a kind in two entries).
 */
export interface KindKeys {
  kind: string;
  included: string[];
  excluded: string[];
}

export function keysByKind(d: SegmentDraft): KindKeys[] {
  const rows = new Map<string, KindKeys>([[USER_KIND, { kind: USER_KIND, included: [...d.included], excluded: [...d.excluded] }]]);
  const row = (kind: string) => rows.get(kind) ?? rows.set(kind, { kind, included: [], excluded: [] }).get(kind)!;
  for (const t of d.includedContexts) row(t.contextKind).included.push(...t.values);
  for (const t of d.excludedContexts) row(t.contextKind).excluded.push(...t.values);
  return [...rows.values()];
}

/** The rows back as the segment's four fields; a kind without keys is left out. */
export function fromKeysByKind(rows: readonly KindKeys[]): Pick<SegmentDraft, 'included' | 'excluded' | 'includedContexts' | 'excludedContexts'> {
  // A row typed as `user` ("Other kind…") joins the user keys rather than vanish from the draft.
  const users = rows.filter((r) => r.kind === USER_KIND);
  const others = rows.filter((r) => r.kind !== USER_KIND);
  const list = (pick: (r: KindKeys) => string[]): SegmentTarget[] => others.filter((r) => pick(r).length > 0).map((r) => ({ contextKind: r.kind, values: pick(r) }));
  const userKeys = (pick: (r: KindKeys) => string[]) => [...new Set(users.flatMap(pick))];
  return { included: userKeys((r) => r.included), excluded: userKeys((r) => r.excluded), includedContexts: list((r) => r.included), excludedContexts: list((r) => r.excluded) };
}

/** How many keys a segment lists, included and excluded, over every kind. */
export const countKeys = (s: Pick<Segment, 'included' | 'excluded' | 'includedContexts' | 'excludedContexts'>) => ({
  included: s.included.length + s.includedContexts.reduce((n, t) => n + t.values.length, 0),
  excluded: s.excluded.length + s.excludedContexts.reduce((n, t) => n + t.values.length, 0),
});
