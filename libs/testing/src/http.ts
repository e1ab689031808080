/** A fetch that returns status, headers and the parsed body (JSON when it is JSON). */
export interface HttpResult<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export async function http<T = any>(url: string, init: RequestInit & { json?: unknown } = {}): Promise<HttpResult<T>> {
  const { json, ...rest } = init;
  const headers = new Headers(rest.headers);
  let body = rest.body;
  if (json !== undefined) {
    body = JSON.stringify(json);
    if (!headers.has('content-type')) headers.set('content-type', 'application/json');
  }
  const res = await fetch(url, { ...rest, headers, body });
  const text = await res.text();
  const type = res.headers.get('content-type') ?? '';
  let parsed: unknown = text;
  if (/json/.test(type) && text !== '') parsed = JSON.parse(text);
  return { status: res.status, headers: res.headers, body: parsed as T, text };
}

/**
 * The address a client on this machine dials for a server bound to `host`: a wildcard bind (0.0.0.0
 * or ::, as in a container) is reached through loopback.
 */
export function dialHost(host: string): string {
  return host === '0.0.0.0' || host === '::' || host === '' ? '127.0.0.1' : host;
}
