import { RE2JS } from 're2js';

/**
 * `matches` clauses run on re2js, RE2 in JavaScript: linear in the input whatever the pattern, so no
 * stored pattern can hold the event loop (`^(a+)+$` against "aaaa…!" doubled per character on
 * JavaScript's backtracking engine). Chosen over V8's linear engine (not linear on every pattern,
 * and its fallback did not bound all of them) and re2-wasm (each call crosses into WebAssembly); the
 * figures are in docs/benchmarks.md, "Regular expressions". It runs in the console's editor too,
 * which checks drafts with this validator.
 *
 * Syntax stays JavaScript's: a pattern JavaScript refuses is invalid (a warning, never matches, as
 * LaunchDarkly stores it), and JavaScript-only syntax (`\u00e9`, `[^]`, `(?<name>`) is translated by
 * re2js. Matching is RE2's, which is LaunchDarkly's Go SDK's (the reference): the same as
 * JavaScript's except that `.` also matches \r, \u2028 and \u2029, and `\s` is ASCII whitespace.
 * What RE2 cannot run in linear time (backreferences, lookahead, lookbehind, counted repetitions
 * over 1000) is refused at write, and a stored one never matches.
 */

/** Longest `matches` pattern accepted at write; a longer stored one never matches. */
export const MAX_REGEX_PATTERN_LENGTH = 512;
/** Longest string a `matches` clause reads: a longer attribute value does not match (negated: matches). */
export const MAX_REGEX_INPUT_LENGTH = 1024;

export const REGEX_INVALID = 'is not a valid regular expression';
export const REGEX_TOO_LONG = `is longer than ${MAX_REGEX_PATTERN_LENGTH} characters`;
export const REGEX_NOT_LINEAR =
  'cannot be evaluated in linear time (backreferences, lookahead, lookbehind and counted repetitions over 1000 are not supported)';

/** What `matches` needs of a compiled pattern. */
export interface LinearRegex {
  test(input: string): boolean;
}

/**
 * The compiled pattern, or why not: REGEX_INVALID (a warning: LaunchDarkly stores it, it never
 * matches), REGEX_TOO_LONG or REGEX_NOT_LINEAR (refused at write, never matches when stored).
 */
export function compileRegex(pattern: string): LinearRegex | string {
  try {
    // JavaScript decides what is a valid pattern, as before (LaunchDarkly's Node SDK): no flags.
    new RegExp(pattern);
  } catch {
    return REGEX_INVALID;
  }
  if (pattern.length > MAX_REGEX_PATTERN_LENGTH) return REGEX_TOO_LONG;
  try {
    // A search (not a full match), case-sensitive, `^`/`$` at the ends of the input, like RegExp.
    return RE2JS.compile(RE2JS.translateRegExp(pattern));
  } catch {
    return REGEX_NOT_LINEAR;
  }
}
