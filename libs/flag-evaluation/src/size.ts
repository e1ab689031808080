/**
 * What "a flag's bytes" means everywhere (the API's limit and byte quota, the flag store, the flag
 * file): the UTF-8 length of the flag's definition in one environment as JSON, as evaluators receive
 * and hold it. Its `version` is left out: it grows with every write, not with what was written, so a
 * flag at the limit does not pass it by being saved again.
 */
export function flagDefinitionBytes(definition: object): number {
  const { version: _version, ...measured } = definition as { version?: unknown };
  return utf8Length(JSON.stringify(measured));
}

/** One flag's definition in one environment is bounded by default to this (FLAG_MAX_BYTES): 32 KiB. */
export const DEFAULT_FLAG_MAX_BYTES = 32 * 1024;

/** The UTF-8 length of `text`, without encoding it (a lone surrogate counts as U+FFFD: 3 bytes). */
export function utf8Length(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}
