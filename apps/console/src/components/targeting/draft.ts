import type { Flag, JsonValue } from '../../api';

/** The fields of a flag the detail page edits: global settings and variations, and the environment's targeting. */
export const EDITABLE_FIELDS = ['name', 'description', 'defaultValue', 'tags', 'clientSideAvailability', 'variations', 'offValue', 'targets', 'rules', 'prerequisites'] as const;
export type EditableField = (typeof EDITABLE_FIELDS)[number];
export type FlagDraft = Pick<Flag, EditableField>;

export const FIELD_LABELS: Record<EditableField | 'enabled', string> = {
  name: 'Name',
  description: 'Description',
  defaultValue: 'Default value',
  tags: 'Tags',
  clientSideAvailability: 'Client-side availability',
  variations: 'Variations (and fallthrough weights)',
  offValue: 'Off value',
  targets: 'Individual targets',
  rules: 'Rules',
  prerequisites: 'Prerequisites',
  enabled: 'On/off',
};

export function draftOf(flag: Flag): FlagDraft {
  const d = {} as Record<EditableField, unknown>;
  for (const f of EDITABLE_FIELDS) d[f] = structuredClone(flag[f]);
  return d as FlagDraft;
}

/** Structural equality of JSON values, object keys in any order. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => sameJson(x, b[i]));
  const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  return ka.length === kb.length && ka.every((k) => sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

/** The fields of `draft` that differ from `base`: what a PATCH sends (omitted fields stay as they are). */
export function changedFields(base: FlagDraft, draft: FlagDraft): Partial<FlagDraft> {
  const out: Record<string, unknown> = {};
  for (const f of EDITABLE_FIELDS) if (!sameJson(base[f], draft[f])) out[f] = draft[f];
  return out as Partial<FlagDraft>;
}

export interface FieldChange {
  field: string;
  from: unknown;
  to: unknown;
}

/** Field by field, what changed between two versions of a flag (the enabled switch included). */
export function flagChanges(before: Flag, after: Flag): FieldChange[] {
  return [...EDITABLE_FIELDS, 'enabled' as const].filter((f) => !sameJson(before[f], after[f])).map((f) => ({ field: f, from: before[f], to: after[f] }));
}

export interface Rebased {
  draft: FlagDraft;
  /** Fields both the user and someone else changed, differently: the user's edit wins, so they should look. */
  conflicts: EditableField[];
}

/** The user's edits (base -> draft) applied on top of the server's newer version. */
export function rebase(base: FlagDraft, draft: FlagDraft, server: Flag): Rebased {
  const mine = changedFields(base, draft);
  const next = draftOf(server);
  const conflicts: EditableField[] = [];
  for (const f of Object.keys(mine) as EditableField[]) {
    if (!sameJson(base[f], server[f]) && !sameJson(server[f], draft[f])) conflicts.push(f);
    (next as Record<string, unknown>)[f] = structuredClone(draft[f]);
  }
  return { draft: next, conflicts };
}

export interface PathChange {
  path: string;
  from?: JsonValue;
  to?: JsonValue;
}

function flatten(v: unknown, path: string, out: Map<string, JsonValue>): void {
  if (Array.isArray(v) && v.length > 0) v.forEach((x, i) => flatten(x, `${path}[${i}]`, out));
  else if (typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length > 0) {
    for (const [k, x] of Object.entries(v)) if (x !== undefined) flatten(x, path ? `${path}.${k}` : k, out);
  } else if (v !== undefined) out.set(path, v as JsonValue);
}

/**
 * A readable diff of two JSON values: each leaf path (`rules[0].clauses[1].values[0]`) that was
 * added, removed or changed, in document order.
 */
export function diffJson(from: unknown, to: unknown, root = ''): PathChange[] {
  const a = new Map<string, JsonValue>();
  const b = new Map<string, JsonValue>();
  flatten(from, root, a);
  flatten(to, root, b);
  // An empty list or object that the other side fills is said by the paths under it.
  const filled = (m: Map<string, JsonValue>, path: string, v: JsonValue) =>
    typeof v === 'object' && v !== null && [...m.keys()].some((k) => k.startsWith(`${path}[`) || k.startsWith(`${path}.`));
  for (const [path, v] of [...a]) if (filled(b, path, v)) a.delete(path);
  for (const [path, v] of [...b]) if (filled(a, path, v)) b.delete(path);
  const out: PathChange[] = [];
  for (const [path, v] of a) {
    if (!b.has(path)) out.push({ path, from: v });
    else if (!sameJson(v, b.get(path))) out.push({ path, from: v, to: b.get(path) });
  }
  for (const [path, v] of b) if (!a.has(path)) out.push({ path, to: v });
  return out;
}
