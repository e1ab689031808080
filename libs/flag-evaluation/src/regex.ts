import * as v8 from 'node:v8';

/**
 * `matches` clauses run on V8's own regex engine with a linear-time guarantee, so no stored pattern
 * can hold the event loop (`^(a+)+$` against "aaaa…!" doubled per character on the backtracking
 * engine).
 *
 * How: a pattern is accepted only when V8's linear engine (RE2's automaton, the `l` flag) can run
 * it; it then runs on the ordinary backtracking engine, which V8 moves to the linear engine after
 * REGEX_BACKTRACKS_BEFORE_LINEAR backtracks of one match. Ordinary patterns keep the backtracking
 * engine's speed (the linear engine alone costs 20 to 80 times more per match, and re2js or re2-wasm
 * 5 to 100 times more); a pathological one costs at most that many backtracks plus one linear pass.
 * Same parser, so ordinary patterns mean exactly what they meant (JavaScript syntax, LaunchDarkly's
 * Node SDK semantics). The V8 flags are process-wide: any other regex of the process that backtracks
 * that much also finishes on the linear engine, with the same result.
 *
 * What the linear engine refuses (backreferences, lookahead, lookbehind, counted repetitions over
 * about a thousand) is refused at write, and a stored one never matches, like an invalid pattern.
 */

/** Longest `matches` pattern accepted at write; a longer stored one never matches. */
export const MAX_REGEX_PATTERN_LENGTH = 512;
/** Longest string a `matches` clause reads: a longer attribute value does not match (negated: matches). */
export const MAX_REGEX_INPUT_LENGTH = 1024;
/** Backtracks of one match before V8 finishes it on the linear engine. */
export const REGEX_BACKTRACKS_BEFORE_LINEAR = 10_000;

function enableLinearEngine(): boolean {
  try {
    // Undefined in a browser bundle (the console's editor uses the validator): checked below.
    if (typeof v8.setFlagsFromString === 'function') {
      v8.setFlagsFromString('--enable-experimental-regexp-engine');
      v8.setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks');
      v8.setFlagsFromString(`--regexp-backtracks-before-fallback=${REGEX_BACKTRACKS_BEFORE_LINEAR}`);
    }
  } catch {
    // A bundler's stub of node:v8 may throw on access.
  }
  try {
    new RegExp('', 'l');
    return true;
  } catch {
    return false;
  }
}

/** True under Node (every server-side caller); false in a browser, where only syntax is checked. */
export const LINEAR_REGEX_ENGINE = enableLinearEngine();

if (!LINEAR_REGEX_ENGINE && typeof process === 'object' && typeof process.versions?.node === 'string') {
  // Evaluating without the fallback would bring back the denial of service: refuse to load.
  throw new Error(`@flagship/flag-evaluation: this Node.js (${process.version}) has no linear-time regex engine (--enable-experimental-regexp-engine)`);
}

export const REGEX_INVALID = 'is not a valid regular expression';
export const REGEX_TOO_LONG = `is longer than ${MAX_REGEX_PATTERN_LENGTH} characters`;
export const REGEX_NOT_LINEAR =
  'cannot be evaluated in linear time (backreferences, lookahead, lookbehind and counted repetitions over 1000 are not supported)';

/**
 * The compiled regex, or why not: REGEX_INVALID (a warning: LaunchDarkly stores it, it never
 * matches), REGEX_TOO_LONG or REGEX_NOT_LINEAR (refused at write, never matches when stored).
 */
export function compileRegex(pattern: string): RegExp | string {
  let re: RegExp;
  try {
    // No flags, like LaunchDarkly's Node SDK: a search (not a full match), case-sensitive, stateless.
    re = new RegExp(pattern);
  } catch {
    return REGEX_INVALID;
  }
  if (pattern.length > MAX_REGEX_PATTERN_LENGTH) return REGEX_TOO_LONG;
  if (LINEAR_REGEX_ENGINE) {
    try {
      new RegExp(pattern, 'l');
    } catch {
      return REGEX_NOT_LINEAR;
    }
  }
  return re;
}
