import { type FlagDefinition, validateFlagDefinition } from '@flagship/flag-evaluation';

/**
 * The flag file: the export format of management-api's `GET /api/flags/export` (one tenant, one
 * environment). Flags are FlagDefinitions as seen in that environment; other fields a flag carries
 * in the export (name, description, tags, projectId) are ignored here.
 */
export interface FlagFile {
  version: 1;
  tenantId?: string;
  environment?: string;
  generatedAt?: string;
  flags: FlagDefinition[];
}

/** Why a flag file was refused; the message is one line, fit for a log. */
export class FlagFileError extends Error {
  override readonly name = 'FlagFileError';
}

/** How many problems a refusal lists before summarising the rest. */
const SHOWN_PROBLEMS = 5;

/**
 * Parses and validates a whole flag file, or throws FlagFileError. All or nothing: one invalid flag
 * refuses the file, so a half-edited file never replaces flags that worked.
 *
 * Prerequisites are checked for shape only, not against the other flags: an export taken while a
 * prerequisite flag was being deleted must still load (the evaluator answers such a flag with
 * PREREQUISITE_FAILED, and a cycle with an error, exactly as the Postgres source would).
 */
export function parseFlagFile(text: string): FlagFile {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new FlagFileError(`not valid JSON (${err instanceof Error ? err.message : String(err)})`);
  }
  return validateFlagFile(doc);
}

/** validateFlagFile's half of parseFlagFile, for a document already parsed. */
export function validateFlagFile(doc: unknown): FlagFile {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new FlagFileError('must be a JSON object');
  const d = doc as Record<string, unknown>;
  const problems: string[] = [];
  if (d.version !== 1) problems.push(`version: must be 1 (got ${JSON.stringify(d.version) ?? 'nothing'})`);
  for (const field of ['tenantId', 'environment', 'generatedAt'] as const) {
    if (d[field] !== undefined && typeof d[field] !== 'string') problems.push(`${field}: must be a string`);
  }
  if (!Array.isArray(d.flags)) {
    problems.push('flags: must be an array');
  } else {
    const seen = new Map<string, number>();
    (d.flags as unknown[]).forEach((flag, i) => {
      for (const p of validateFlagDefinition(flag as FlagDefinition)) {
        problems.push(`flags[${i}]${p.path === '' ? '' : `.${p.path}`}: ${p.message}`);
      }
      const key = (flag as { key?: unknown } | null)?.key;
      if (typeof key === 'string') {
        const first = seen.get(key);
        if (first !== undefined) problems.push(`flags[${i}].key: duplicate of flags[${first}] ('${key}')`);
        else seen.set(key, i);
      }
    });
  }
  if (problems.length > 0) {
    const more = problems.length > SHOWN_PROBLEMS ? `; and ${problems.length - SHOWN_PROBLEMS} more` : '';
    throw new FlagFileError(`${problems.length} problem(s): ${problems.slice(0, SHOWN_PROBLEMS).join('; ')}${more}`);
  }
  return d as unknown as FlagFile;
}
