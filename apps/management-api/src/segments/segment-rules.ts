import { checkSegmentDefinition, type SegmentDefinition, utf8Length, type ValidationProblem } from '@flagship/flag-evaluation';
import { ProblemException } from '@flagship/problem-details';
import { etagMatches } from '../flags/flag-rules';
import { largestField } from '../flags/flag-size';
import { SegmentProblems } from './segments.errors';
import type { SegmentBody, SegmentRow } from './segments.repository';

/**
 * The rules of segment writes, as pure functions of what the service read: each answers the
 * problems it finds (a 422's `errors`, or the refusal to throw), so they are proven without I/O.
 */

/** The fields of a request that make up a segment's definition (what SEGMENT_MAX_BYTES bounds). */
export const SEGMENT_BODY_FIELDS = ['included', 'excluded', 'includedContexts', 'excludedContexts', 'rules', 'salt'] as const;

/** What a segment's stored definition is made of, from a request's fields (absent lists are empty). */
export function segmentBodyOf(sent: Partial<Record<(typeof SEGMENT_BODY_FIELDS)[number], unknown>>, before?: SegmentBody): SegmentBody {
  const pick = <K extends keyof SegmentBody>(field: K, empty: SegmentBody[K]): SegmentBody[K] => (sent[field] !== undefined ? (sent[field] as SegmentBody[K]) : (before?.[field] ?? empty));
  const body: SegmentBody = {
    included: pick('included', []),
    excluded: pick('excluded', []),
    includedContexts: pick('includedContexts', []),
    excludedContexts: pick('excludedContexts', []),
    rules: pick('rules', []),
  };
  // null resets the salt to the segment key (LaunchDarkly's default); absent keeps it.
  const salt = sent.salt === undefined ? before?.salt : sent.salt;
  if (typeof salt === 'string') body.salt = salt;
  return body;
}

/** Its size as evaluators hold it: the JSON of key, name and definition, in UTF-8 bytes. */
export function segmentDefinitionBytes(key: string, name: string, body: SegmentBody): number {
  return utf8Length(JSON.stringify({ key, name, ...body }));
}

/** How many context keys a segment lists (included and excluded, every kind), and its longest list. */
export function listedKeys(body: SegmentBody): { count: number; longest: string } {
  let count = 0;
  let longest = 'included';
  let most = -1;
  const add = (values: unknown, path: string): void => {
    const n = Array.isArray(values) ? values.length : 0;
    count += n;
    if (n > most) [most, longest] = [n, path];
  };
  add(body.included, 'included');
  add(body.excluded, 'excluded');
  for (const field of ['includedContexts', 'excludedContexts'] as const) {
    const list: unknown = body[field];
    if (Array.isArray(list)) list.forEach((t: { values?: unknown } | null, i) => add(t?.values, `${field}[${i}].values`));
  }
  return { count, longest };
}

export interface SegmentBounds {
  /** SEGMENT_MAX_BYTES */
  maxBytes: number;
  /** SEGMENT_MAX_KEYS */
  maxKeys: number;
}

/**
 * A segment's problems as a write leaves it (`sent`: the request's fields, for where a size refusal
 * points; `before`: the stored one, for a change): the evaluator's check, by path, then the bounds on
 * listed keys and bytes. A bound refuses only growth: a segment stored before a limit was lowered
 * can still be shrunk or renamed. With `segmentLookup` (the environment's segments), a segmentMatch
 * naming a missing segment, or leading back to this one (a cycle), is refused too.
 */
export function segmentProblems(
  segment: SegmentDefinition,
  sent: object,
  bounds: SegmentBounds,
  before?: { keys: number; bytes: number },
  segmentLookup?: (key: string) => SegmentDefinition | undefined,
): { errors: Record<string, string>; warnings: ValidationProblem[]; bytes: number } {
  const check = checkSegmentDefinition(segment, segmentLookup);
  const errors: Record<string, string> = {};
  for (const p of check.errors) errors[p.path || 'segment'] ??= p.message;
  const { key, name, description: _description, version: _version, ...body } = segment;
  const bytes = segmentDefinitionBytes(key, name, body);
  if (check.errors.length > 0) return { errors, warnings: check.warnings, bytes };
  const keys = listedKeys(body);
  if (keys.count > bounds.maxKeys && keys.count > (before?.keys ?? 0)) {
    errors[keys.longest] = `the segment would list ${keys.count} context keys; a segment may list at most ${bounds.maxKeys} (included and excluded, every kind together)`;
  }
  if (bytes > bounds.maxBytes && bytes > (before?.bytes ?? 0)) {
    errors[largestField(sent, SEGMENT_BODY_FIELDS) ?? 'segment'] = `the segment's definition would take ${bytes} bytes; a segment may take at most ${bounds.maxBytes} bytes`;
  }
  return { errors, warnings: check.warnings, bytes };
}

export const segmentEtag = (row: Pick<SegmentRow, 'version'>): string => `"${row.version}"`;

/** 412 when the request's If-Match names another version than the one it would change. */
export function staleSegmentWrite(ifMatch: string | undefined, row: SegmentRow): ProblemException | undefined {
  if (ifMatch === undefined || etagMatches(ifMatch, segmentEtag(row))) return undefined;
  return new ProblemException(SegmentProblems['segment-changed'], `The segment is at version ${segmentEtag(row)}; read it again and retry.`, { currentVersion: segmentEtag(row) });
}

/** 409 naming what uses the segment (flags through segmentMatch, other segments nesting it): deleting it would change their answers. */
export function segmentInUse(key: string, flags: readonly string[], segments: readonly string[]): ProblemException | undefined {
  if (flags.length === 0 && segments.length === 0) return undefined;
  const users = [...(flags.length > 0 ? [`flags ${flags.join(', ')}`] : []), ...(segments.length > 0 ? [`segments ${segments.join(', ')}`] : [])].join(' and ');
  return new ProblemException(SegmentProblems['segment-in-use'], `${users} use segment ${key} through segmentMatch in this environment; remove those clauses first.`, {
    flags: [...flags],
    segments: [...segments],
  });
}
