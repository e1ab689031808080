import { checkFlagDefinition, checkSegmentDefinition, type FlagDefinition, type SegmentDefinition, type ValidationProblem } from '@flagship/flag-evaluation';
import type { ClauseOperator, Flag, JsonValue, Segment } from '../../api';
import type { FlagDraft } from './draft';

/**
 * The draft checked by the evaluator's own validator (libs/flag-evaluation), as the API will check
 * it on save: errors would be refused (422); warnings are LaunchDarkly-accepted values that can
 * never match. Paths are the API's (`rules[0].clauses[1].values[0]`).
 */
export interface DraftCheck {
  errors: ValidationProblem[];
  warnings: ValidationProblem[];
}

const definitionOf = (flag: Pick<Flag, 'key' | 'type' | 'enabled' | 'salt'>, d: FlagDraft): FlagDefinition => ({
  key: flag.key,
  type: flag.type,
  defaultValue: d.defaultValue,
  variations: d.variations.map((v) => ({ ...v })),
  enabled: flag.enabled,
  ...(d.offValue === null ? {} : { offValue: d.offValue }),
  targets: d.targets,
  // The console's rules may hold segmentMatch and other kinds before the evaluator's types name them
  // (api.ts); the validator reads its input defensively and says what it refuses, by path.
  rules: d.rules as FlagDefinition['rules'],
  prerequisites: d.prerequisites,
  ...(flag.salt === null ? {} : { salt: flag.salt }),
});

export function checkDraft(flag: Flag, draft: FlagDraft, others: readonly Flag[] | undefined): DraftCheck {
  const byKey = new Map((others ?? []).filter((f) => f.key !== flag.key).map((f) => [f.key, f]));
  const lookup = others ? (key: string) => (byKey.has(key) ? definitionOf(byKey.get(key)!, byKey.get(key)!) : undefined) : undefined;
  const r = checkFlagDefinition(definitionOf(flag, draft), lookup);
  return { errors: r.errors, warnings: r.warnings };
}

/** The fields of a segment its editor changes. */
export type SegmentDraft = Pick<Segment, 'name' | 'description' | 'included' | 'excluded' | 'includedContexts' | 'excludedContexts' | 'rules'>;

/** A segment draft checked by the evaluator's validator, as the API checks it on save (paths are the API's). */
export function checkSegment(key: string, d: SegmentDraft): DraftCheck {
  const r = checkSegmentDefinition({ key, ...d, rules: d.rules as SegmentDefinition['rules'] });
  return { errors: r.errors, warnings: r.warnings };
}

/** Problems at `prefix` or below it. */
export const problemsAt = (list: readonly ValidationProblem[], prefix: string): ValidationProblem[] =>
  list.filter((p) => p.path === prefix || p.path.startsWith(`${prefix}.`) || p.path.startsWith(`${prefix}[`));

type ValueKind = 'any' | 'string' | 'regex' | 'number' | 'date' | 'semver' | 'segment';

export const OPERATORS: readonly { op: ClauseOperator; label: string; kind: ValueKind }[] = [
  { op: 'in', label: 'is one of (in)', kind: 'any' },
  { op: 'startsWith', label: 'starts with', kind: 'string' },
  { op: 'endsWith', label: 'ends with', kind: 'string' },
  { op: 'contains', label: 'contains', kind: 'string' },
  { op: 'matches', label: 'matches regex', kind: 'regex' },
  { op: 'lessThan', label: 'less than (<)', kind: 'number' },
  { op: 'lessThanOrEqual', label: 'at most (≤)', kind: 'number' },
  { op: 'greaterThan', label: 'greater than (>)', kind: 'number' },
  { op: 'greaterThanOrEqual', label: 'at least (≥)', kind: 'number' },
  { op: 'before', label: 'before (date)', kind: 'date' },
  { op: 'after', label: 'after (date)', kind: 'date' },
  { op: 'semVerEqual', label: 'semver equal', kind: 'semver' },
  { op: 'semVerLessThan', label: 'semver less than', kind: 'semver' },
  { op: 'semVerGreaterThan', label: 'semver greater than', kind: 'semver' },
  { op: 'segmentMatch', label: 'is in segment', kind: 'segment' },
];

const kindOf = (op: ClauseOperator): ValueKind => OPERATORS.find((o) => o.op === op)?.kind ?? 'any';

export const VALUE_HINTS: Record<ValueKind, string> = {
  any: 'One per line. Text is a string; 42, true, false and null are JSON; quote a string that looks like one ("42").',
  string: 'One string per line.',
  regex: 'One regular expression per line (matches anywhere in the value).',
  number: 'One number per line.',
  date: 'One per line: epoch milliseconds or an RFC 3339 date-time (2026-01-31T00:00:00Z).',
  semver: 'One semantic version per line, such as 1.2.3 (no leading v).',
  segment: "The segments of this environment the context must be in (any of them); the attribute is not read.",
};

export const valueHint = (op: ClauseOperator): string => VALUE_HINTS[kindOf(op)];

/**
 * One line of the values box as the JSON value sent. Text the operator cannot use stays text (a
 * string for a numeric operator), as LaunchDarkly accepts it; the check then warns that it never matches.
 */
export function parseClauseValue(op: ClauseOperator, line: string): JsonValue {
  const t = line.trim();
  switch (kindOf(op)) {
    case 'number': {
      const n = Number(t);
      return t !== '' && Number.isFinite(n) ? n : line;
    }
    case 'date':
      return /^-?\d+$/.test(t) ? Number(t) : t;
    case 'semver':
    case 'segment':
      return t;
    case 'any':
      if (/^(-?\d|true$|false$|null$|")/.test(t)) {
        try {
          return JSON.parse(t) as JsonValue;
        } catch {
          return line;
        }
      }
      return line;
    default:
      return line;
  }
}

/** The inverse of parseClauseValue, for the values box. */
export function formatClauseValue(op: ClauseOperator, v: JsonValue): string {
  if (typeof v !== 'string') return JSON.stringify(v);
  if (kindOf(op) === 'any' && parseClauseValue(op, v) !== v) return JSON.stringify(v);
  return v;
}

export const parseClauseValues = (op: ClauseOperator, text: string): JsonValue[] =>
  text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => parseClauseValue(op, l));
