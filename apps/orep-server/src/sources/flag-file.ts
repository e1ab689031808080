import {
  checkSegmentDefinition,
  type FlagDefinition,
  flagDefinitionBytes,
  prerequisiteBoundProblems,
  type SegmentDefinition,
  validateFlagDefinition,
  withLegacyReferenceKinds,
} from '@flagship/flag-evaluation';

/**
 * The flag file: the export format of management-api's `GET /api/flags/export` (one tenant, one
 * environment). Flags are FlagDefinitions as seen in that environment; other fields a flag carries
 * in the export (name, description, tags, projectId) are ignored here.
 *
 * Version 2 reads clause attributes (and rollout bucketBy) as LaunchDarkly does: literally without a
 * `contextKind`, even when they start with `/`; as references with `contextKind: 'user'`. In version
 * 1 every `/`-attribute was a reference, so a version-1 file is read with those given the kind
 * (withLegacyReferenceKinds): it serves what it served.
 */
export interface FlagFile {
  version: FlagFileVersion;
  tenantId?: string;
  environment?: string;
  generatedAt?: string;
  flags: FlagDefinition[];
  /** The environment's segments, which flags name through segmentMatch (the export writes them; older files have none). */
  segments?: SegmentDefinition[];
}

/** 1, or FLAG_FILE_VERSION (2), which management-api's export writes. */
export type FlagFileVersion = 1 | 2;

/** A flag of a version-1 file as today's evaluator must read it (see FlagFile). */
function fromVersion1(flag: unknown): unknown {
  if (typeof flag !== 'object' || flag === null || Array.isArray(flag)) return flag;
  const rules = (flag as { rules?: unknown }).rules;
  const upgraded = withLegacyReferenceKinds(rules);
  return upgraded === rules ? flag : { ...flag, rules: upgraded };
}

/** Why a flag file was refused; the message is one line, fit for a log. */
export class FlagFileError extends Error {
  override readonly name = 'FlagFileError';
}

/** How many problems a refusal lists before summarising the rest. */
const SHOWN_PROBLEMS = 5;

/**
 * The bytes a file's flags may take (flagDefinitionBytes): each flag, and all of them together. A
 * segment is held to the same bounds (each one within a flag's, and counted in the total): it is
 * compiled and held beside the flags, and a file must not grow past the set's bound through them.
 */
export interface FlagFileBounds {
  maxFlagBytes: number;
  maxSetBytes: number;
}

/** No bounds (the example flags built into the app). */
const UNBOUNDED: FlagFileBounds = { maxFlagBytes: Infinity, maxSetBytes: Infinity };

/** What the flags checked so far take, against the bounds. */
interface SizeTally {
  bounds: FlagFileBounds;
  total: number;
}

/**
 * Parses and validates a whole flag file, or throws FlagFileError. All or nothing: one invalid flag
 * refuses the file, so a half-edited file never replaces flags that worked.
 *
 * Prerequisites are checked for shape only, not against the other flags: an export taken while a
 * prerequisite flag was being deleted must still load (the evaluator answers such a flag with
 * PREREQUISITE_FAILED, and a cycle with an error, exactly as the Postgres source would).
 */
export function parseFlagFile(text: string, bounds: FlagFileBounds = UNBOUNDED): FlagFile {
  const file = readFlagFile(text, bounds);
  return { ...file, flags: file.flags.map((f) => JSON.parse(f.text) as FlagDefinition) };
}

/** One flag of a file: its key and its JSON text, validated (see readFlagFile). */
export interface FlagFileEntry {
  key: string;
  text: string;
}

export type LazyFlagFile = Omit<FlagFile, 'flags'> & { flags: FlagFileEntry[] };

/**
 * parseFlagFile's checks, keeping each flag as its JSON text rather than as objects: each flag is
 * parsed on its own, validated, and dropped, and its text (a slice of the file's, which V8 does not
 * copy) is what the LiveFlagSet keeps until the flag is first evaluated. Parsing the whole document at
 * once held the text, every flag's objects and the garbage of validating them at the same time, which
 * at 100,000 flags reached orep-server's memory budget (docs/decisions/2026-11-29-flag-evaluation-costs.md). Files
 * the splitter does not follow (see splitFlags) take that path still, with the same outcome.
 */
export function readFlagFile(text: string, bounds: FlagFileBounds = UNBOUNDED): LazyFlagFile {
  const split = splitFlags(text);
  if (split === undefined) return wholeFile(text, bounds);
  let envelope: Record<string, unknown>;
  try {
    envelope = JSON.parse(split.envelope) as Record<string, unknown>;
  } catch {
    return wholeFile(text, bounds); // whose error names the position in the file, not in the envelope
  }
  const problems: string[] = envelopeProblems(envelope);
  const flags: FlagFileEntry[] = [];
  const seen = new Map<string, number>();
  const graph: PrerequisiteGraph = new Map();
  const size: SizeTally = { bounds, total: 0 };
  for (let i = 0; i < split.flags.length; i++) {
    const [from, to] = split.flags[i]!;
    let flagText = text.slice(from, to);
    let flag: unknown;
    try {
      flag = JSON.parse(flagText);
    } catch {
      return wholeFile(text, bounds); // which says where, in the whole file
    }
    if (envelope.version === 1) {
      const upgraded = fromVersion1(flag);
      if (upgraded !== flag) flagText = JSON.stringify((flag = upgraded));
    }
    checkFlag(flag, i, seen, problems, graph, size);
    if (problems.length === 0) flags.push({ key: (flag as FlagDefinition).key, text: flagText });
  }
  checkPrerequisiteBounds(graph, seen, problems);
  checkSegments(envelope.segments, problems, size);
  checkTotal(size, problems);
  throwIfAny(problems);
  return { ...(envelope as Omit<FlagFile, 'flags'>), flags };
}

function wholeFile(text: string, bounds: FlagFileBounds): LazyFlagFile {
  const file = validateFlagFile(parseJson(text), bounds);
  return { ...file, flags: file.flags.map((f) => ({ key: f.key, text: JSON.stringify(f) })) };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new FlagFileError(`not valid JSON (${err instanceof Error ? err.message : String(err)})`);
  }
}

/**
 * The top-level `flags` array of a flag file, found without parsing the rest: the file with that
 * array replaced by `[]` (the envelope), and where each element starts and ends. Strings are skipped
 * as JSON writes them (escapes included), brackets counted outside them, and commas required between
 * elements; every piece is then parsed by JSON.parse, so what is accepted is exactly valid JSON.
 * undefined for anything else (no such array, `flags` twice, malformed text): the caller then parses
 * the file whole and reports what is wrong with it.
 */
export function splitFlags(text: string): { envelope: string; flags: Array<[number, number]> } | undefined {
  const n = text.length;
  let i = skipSpace(text, 0);
  if (text.charCodeAt(i) !== OPEN_BRACE) return undefined;
  i = skipSpace(text, i + 1);
  let array: [number, number] | undefined;
  const flags: Array<[number, number]> = [];
  if (text.charCodeAt(i) === CLOSE_BRACE) return undefined;
  while (i < n) {
    if (text.charCodeAt(i) !== QUOTE) return undefined;
    const keyEnd = skipString(text, i);
    if (keyEnd < 0) return undefined;
    const isFlags = text.slice(i, keyEnd) === '"flags"';
    i = skipSpace(text, keyEnd);
    if (text.charCodeAt(i) !== COLON) return undefined;
    i = skipSpace(text, i + 1);
    if (isFlags) {
      if (array !== undefined || text.charCodeAt(i) !== OPEN_BRACKET) return undefined;
      const start = i;
      i = skipSpace(text, i + 1);
      if (text.charCodeAt(i) !== CLOSE_BRACKET) {
        for (;;) {
          const end = skipValue(text, i);
          if (end < 0) return undefined;
          flags.push([i, end]);
          i = skipSpace(text, end);
          const c = text.charCodeAt(i);
          if (c === CLOSE_BRACKET) break;
          if (c !== COMMA) return undefined;
          i = skipSpace(text, i + 1);
        }
      }
      i += 1;
      array = [start, i];
    } else {
      i = skipValue(text, i);
      if (i < 0) return undefined;
    }
    i = skipSpace(text, i);
    const c = text.charCodeAt(i);
    if (c === CLOSE_BRACE) break;
    if (c !== COMMA) return undefined;
    i = skipSpace(text, i + 1);
  }
  if (array === undefined || text.charCodeAt(i) !== CLOSE_BRACE) return undefined;
  if (skipSpace(text, i + 1) !== n) return undefined;
  return { envelope: `${text.slice(0, array[0])}[]${text.slice(array[1])}`, flags };
}

const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;

function skipSpace(text: string, i: number): number {
  for (;;) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i;
    i++;
  }
}

/** The index after the string starting at `i` (a quote), or -1 when it never ends. */
function skipString(text: string, i: number): number {
  const n = text.length;
  for (i++; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === BACKSLASH) i++;
    else if (c === QUOTE) return i + 1;
  }
  return -1;
}

/** The index after the value starting at `i`, or -1 when it is cut short; the value is not checked. */
function skipValue(text: string, i: number): number {
  const n = text.length;
  const first = text.charCodeAt(i);
  if (first === QUOTE) return skipString(text, i);
  if (first === OPEN_BRACE || first === OPEN_BRACKET) {
    let depth = 0;
    for (; i < n; i++) {
      const c = text.charCodeAt(i);
      if (c === QUOTE) {
        i = skipString(text, i) - 1;
        if (i < 0) return -1;
      } else if (c === OPEN_BRACE || c === OPEN_BRACKET) depth++;
      else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
        if (--depth === 0) return i + 1;
      }
    }
    return -1;
  }
  const start = i;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === COMMA || c === CLOSE_BRACE || c === CLOSE_BRACKET || c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) break;
    i++;
  }
  return i === start ? -1 : i;
}

/** validateFlagFile's half of parseFlagFile, for a document already parsed. */
export function validateFlagFile(doc: unknown, bounds: FlagFileBounds = UNBOUNDED): FlagFile {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new FlagFileError('must be a JSON object');
  const given = doc as Record<string, unknown>;
  const d = given.version === 1 && Array.isArray(given.flags) ? { ...given, flags: given.flags.map(fromVersion1) } : given;
  const problems = envelopeProblems(d);
  if (Array.isArray(d.flags)) {
    const seen = new Map<string, number>();
    const graph: PrerequisiteGraph = new Map();
    const size: SizeTally = { bounds, total: 0 };
    (d.flags as unknown[]).forEach((flag, i) => checkFlag(flag, i, seen, problems, graph, size));
    checkPrerequisiteBounds(graph, seen, problems);
    checkSegments(d.segments, problems, size);
    checkTotal(size, problems);
  }
  throwIfAny(problems);
  return d as unknown as FlagFile;
}

/** What is wrong with the file's own fields (flags must be an array; its elements are checked apart). */
function envelopeProblems(d: unknown): string[] {
  if (typeof d !== 'object' || d === null || Array.isArray(d)) throw new FlagFileError('must be a JSON object');
  const doc = d as Record<string, unknown>;
  const problems: string[] = [];
  if (doc.version !== 1 && doc.version !== 2) problems.push(`version: must be 1 or 2 (got ${JSON.stringify(doc.version) ?? 'nothing'})`);
  for (const field of ['tenantId', 'environment', 'generatedAt'] as const) {
    if (doc[field] !== undefined && typeof doc[field] !== 'string') problems.push(`${field}: must be a string`);
  }
  if (!Array.isArray(doc.flags)) problems.push('flags: must be an array');
  if (doc.segments !== undefined && !Array.isArray(doc.segments)) problems.push('segments: must be an array');
  return problems;
}

/**
 * The file's segments (if any): each as the API checks one, against the file's other segments (a
 * segmentMatch naming a segment the file lacks, or a cycle, refuses the file: the API never stores
 * either), a key once, and its bytes within the flags' bounds. Flags naming a segment the file
 * lacks are not refused (as for prerequisites): such a clause never matches, as in Postgres mode.
 */
function checkSegments(segments: unknown, problems: string[], size: SizeTally): void {
  if (!Array.isArray(segments)) return;
  const byKey = new Map<string, SegmentDefinition>();
  for (const s of segments as unknown[]) {
    const key = (s as { key?: unknown } | null)?.key;
    if (typeof key === 'string' && !byKey.has(key)) byKey.set(key, s as SegmentDefinition);
  }
  const seen = new Map<string, number>();
  (segments as unknown[]).forEach((segment, i) => {
    for (const p of checkSegmentDefinition(segment as SegmentDefinition, (k) => byKey.get(k)).errors) {
      problems.push(`segments[${i}]${p.path === '' ? '' : `.${p.path}`}: ${p.message}`);
    }
    if (typeof segment === 'object' && segment !== null) {
      const bytes = flagDefinitionBytes(segment);
      size.total += bytes;
      if (bytes > size.bounds.maxFlagBytes) problems.push(`segments[${i}]: its definition takes ${bytes} bytes, over the ${size.bounds.maxFlagBytes} a flag or segment may take`);
    }
    const key = (segment as { key?: unknown } | null)?.key;
    if (typeof key !== 'string') return;
    const first = seen.get(key);
    if (first !== undefined) problems.push(`segments[${i}].key: duplicate of segments[${first}] ('${key}')`);
    else seen.set(key, i);
  });
}

/** The prerequisites of the file's flags that have any (only those can go beyond the bounds). */
type PrerequisiteGraph = Map<string, Pick<FlagDefinition, 'prerequisites'>>;

/**
 * Adds the problems of flags[i] (its own, its size, and a key already seen) to `problems`, its
 * prerequisites to `graph` and its bytes to `size`.
 */
function checkFlag(flag: unknown, i: number, seen: Map<string, number>, problems: string[], graph: PrerequisiteGraph, size: SizeTally): void {
  for (const p of validateFlagDefinition(flag as FlagDefinition)) {
    problems.push(`flags[${i}]${p.path === '' ? '' : `.${p.path}`}: ${p.message}`);
  }
  if (typeof flag === 'object' && flag !== null) {
    const bytes = flagDefinitionBytes(flag);
    size.total += bytes;
    if (bytes > size.bounds.maxFlagBytes) problems.push(`flags[${i}]: its definition takes ${bytes} bytes, over the ${size.bounds.maxFlagBytes} a flag may take`);
  }
  const key = (flag as { key?: unknown } | null)?.key;
  if (typeof key === 'string') {
    const first = seen.get(key);
    if (first !== undefined) problems.push(`flags[${i}].key: duplicate of flags[${first}] ('${key}')`);
    else seen.set(key, i);
    const prerequisites = (flag as { prerequisites?: unknown }).prerequisites;
    if (Array.isArray(prerequisites) && prerequisites.length > 0) graph.set(key, { prerequisites: prerequisites as FlagDefinition['prerequisites'] });
  }
}

/**
 * The prerequisite bounds of the API (depth, flags reachable), over the whole file: the file is the
 * environment. A prerequisite missing from the file is no error here (see parseFlagFile).
 */
function checkPrerequisiteBounds(graph: PrerequisiteGraph, seen: Map<string, number>, problems: string[]): void {
  for (const p of prerequisiteBoundProblems(graph)) problems.push(`flags[${seen.get(p.key)}].prerequisites: its prerequisites ${p.message} ('${p.key}')`);
}

function checkTotal(size: SizeTally, problems: string[]): void {
  if (size.total > size.bounds.maxSetBytes) problems.push(`flags: take ${size.total} bytes, over the ${size.bounds.maxSetBytes} all flags may take`);
}

function throwIfAny(problems: string[]): void {
  if (problems.length > 0) {
    const more = problems.length > SHOWN_PROBLEMS ? `; and ${problems.length - SHOWN_PROBLEMS} more` : '';
    throw new FlagFileError(`${problems.length} problem(s): ${problems.slice(0, SHOWN_PROBLEMS).join('; ')}${more}`);
  }
}
