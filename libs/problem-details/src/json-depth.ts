/** CONTRACT.md section 4: JSON nested deeper than this is refused with 400. */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/**
 * True when JSON text opens more than `maxDepth` nested arrays or objects. A single pass over the
 * raw text, before parsing: JSON.parse copes with any depth, but what runs on the parsed value
 * afterwards (validation, canonical forms, the evaluator) recurses and would overflow the stack.
 * Brackets inside strings do not count. The text need not be valid JSON; the parser judges that.
 */
export function exceedsJsonDepth(text: string, maxDepth = MAX_JSON_DEPTH): boolean {
  // Deeper than maxDepth takes more than maxDepth opening brackets. Counting them with indexOf
  // (native, and it stops at maxDepth + 1) settles most bodies, such as every evaluation context,
  // several times faster than the scan below.
  if (text.length <= maxDepth) return false;
  let opening = 0;
  for (let i = text.indexOf('{'); i !== -1 && opening <= maxDepth; i = text.indexOf('{', i + 1)) opening++;
  for (let i = text.indexOf('['); i !== -1 && opening <= maxDepth; i = text.indexOf('[', i + 1)) opening++;
  if (opening <= maxDepth) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > maxDepth) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
    }
  }
  return false;
}
