/** One link of an RFC 8288 `Link` header. */
export interface WebLink {
  /** The target as written (usually relative to the request URL). */
  target: string;
  /** Relation types, lower-cased (`rel="next last"` is two). */
  rel: string[];
  /** Every parameter, names lower-cased, quotes removed. */
  params: Record<string, string>;
}

/**
 * Parses `Link: <a>; rel="next", <b>; rel=prev`. Commas and semicolons inside `<...>` or quoted
 * strings belong to the value, so it is scanned rather than split. Malformed links are skipped.
 */
export function parseLinkHeader(value: string | null | undefined): WebLink[] {
  if (!value) return [];
  const header: string = value;
  const links: WebLink[] = [];
  let i = 0;
  const n = header.length;
  const skipSpace = () => {
    while (i < n && (header[i] === ' ' || header[i] === '\t')) i++;
  };
  const skipToNextLink = () => {
    let quoted = false;
    while (i < n && (quoted || header[i] !== ',')) {
      if (header[i] === '"') quoted = !quoted;
      else if (header[i] === '\\' && quoted) i++;
      i++;
    }
    i++;
  };

  while (i < n) {
    skipSpace();
    if (header[i] === ',') {
      i++;
      continue;
    }
    if (header[i] !== '<') {
      skipToNextLink();
      continue;
    }
    const close = header.indexOf('>', i + 1);
    if (close < 0) break;
    const target = header.slice(i + 1, close).trim();
    i = close + 1;
    const params: Record<string, string> = {};
    for (;;) {
      skipSpace();
      if (header[i] !== ';') break;
      i++;
      skipSpace();
      const nameStart = i;
      while (i < n && /[!#$%&'*+\-.^_`|~0-9A-Za-z]/.test(header[i])) i++;
      const name = header.slice(nameStart, i).toLowerCase();
      skipSpace();
      let value = '';
      if (header[i] === '=') {
        i++;
        skipSpace();
        if (header[i] === '"') {
          i++;
          while (i < n && header[i] !== '"') {
            if (header[i] === '\\' && i + 1 < n) i++;
            value += header[i];
            i++;
          }
          i++;
        } else {
          const valueStart = i;
          while (i < n && header[i] !== ';' && header[i] !== ',') i++;
          value = header.slice(valueStart, i).trim();
        }
      }
      // RFC 8288 section 3: only the first occurrence of a parameter counts.
      if (name !== '' && !(name in params)) params[name] = value;
    }
    skipSpace();
    if (i < n && header[i] !== ',') {
      skipToNextLink();
    }
    links.push({ target, rel: (params['rel'] ?? '').toLowerCase().split(/\s+/).filter((r) => r !== ''), params });
  }
  return links;
}

/** The `rel="next"` target resolved against the URL of the response that carried it, if any. */
export function nextPageUrl(header: string | null | undefined, responseUrl: string): string | undefined {
  const next = parseLinkHeader(header).find((l) => l.rel.includes('next'));
  if (!next) return undefined;
  try {
    return new URL(next.target, responseUrl).toString();
  } catch {
    return undefined;
  }
}
