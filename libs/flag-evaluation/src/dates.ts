/**
 * Instants for the before/after operators, as LaunchDarkly reads them: a JSON number is epoch
 * milliseconds; a string must be an RFC 3339 timestamp with date, time and offset (no bare dates,
 * no other formats, no numeric strings). Anything else is no instant, so the clause cannot match.
 */

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** Epoch milliseconds of an RFC 3339 timestamp (fractions below 1 ms kept), or undefined. */
export function parseRfc3339(input: string): number | undefined {
  const m = RFC3339.exec(input);
  if (m === null) return undefined;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  const hour = Number(m[4]);
  const minute = Number(m[5]);
  const second = Number(m[6]);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  // Leap seconds (60) are refused, as Go's time.Parse (LaunchDarkly's reference SDK) refuses them.
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  let ms = Date.UTC(year, month - 1, day, hour, minute, second);
  if (year < 100) {
    // Date.UTC maps years 0-99 to 1900-1999.
    const d = new Date(ms);
    d.setUTCFullYear(year);
    ms = d.getTime();
  }
  if (m[7] !== undefined) ms += Number(`0${m[7]}`) * 1000;
  if (m[8] === undefined) {
    const offHours = Number(m[10]);
    const offMinutes = Number(m[11]);
    if (offHours > 23 || offMinutes > 59) return undefined;
    const offset = (offHours * 60 + offMinutes) * 60_000;
    ms += m[9] === '+' ? -offset : offset;
  }
  return ms;
}

/** An operand of before/after as epoch milliseconds, or undefined when it is no instant. */
export function toInstant(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value === 'string') return parseRfc3339(value);
  return undefined;
}
