import type { MeasuredDefinition } from '@flagship/persistence';

/**
 * The definitions a write grew past `maxBytes` (FLAG_MAX_BYTES). Only grown ones: a flag stored
 * before the limit (or before it was lowered) can still be shrunk, renamed or deleted.
 */
export function oversized(measured: readonly MeasuredDefinition[], maxBytes: number): MeasuredDefinition[] {
  return measured.filter((d) => d.bytes > maxBytes && d.bytes > d.before);
}

/** What a write added to the tenant's flag bytes (negative when it shrank them). */
export function addedBytes(measured: readonly MeasuredDefinition[]): number {
  let added = 0;
  for (const d of measured) added += d.bytes - d.before;
  return added;
}

/** The flags a write adds most bytes to, largest first (at most `n`): key -> bytes added over every environment. */
export function largestAdditions(measured: readonly MeasuredDefinition[], n: number): Record<string, number> {
  const byKey = new Map<string, number>();
  for (const d of measured) byKey.set(d.key, (byKey.get(d.key) ?? 0) + d.bytes - d.before);
  const top = [...byKey].filter(([, added]) => added > 0).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  return Object.fromEntries(top.slice(0, n));
}

/** A 422's `errors`: one message per flag over the limit, at the field `errorKey` names. */
export function sizeErrors(over: readonly MeasuredDefinition[], maxBytes: number, errorKey: (d: MeasuredDefinition) => string): Record<string, string> {
  const byKey = new Map<string, MeasuredDefinition[]>();
  for (const d of over) byKey.set(errorKey(d), [...(byKey.get(errorKey(d)) ?? []), d]);
  const errors: Record<string, string> = {};
  for (const [field, list] of byKey) {
    const largest = Math.max(...list.map((d) => d.bytes));
    const where = [...new Set(list.map((d) => d.environment))].join(', ');
    errors[field] = `the flag's definition would take ${largest} bytes in ${where}; one environment's definition of a flag may take at most ${maxBytes} bytes`;
  }
  return errors;
}

/** Of the fields a request sent, the one whose JSON is longest: where a definition's bytes come from. */
export function largestField(sent: object, fields: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestLength = -1;
  for (const f of fields) {
    const value: unknown = Reflect.get(sent, f);
    if (value === undefined) continue;
    const length = JSON.stringify(value)?.length ?? 0;
    if (length > bestLength) [best, bestLength] = [f, length];
  }
  return best;
}
