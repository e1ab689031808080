/**
 * Decodes Stripe's request encoding: `application/x-www-form-urlencoded` with bracketed keys
 * (`metadata[tenantId]=x`, `line_items[0][price]=p`, `expand[]=y`), as stripe-node writes it.
 * Numeric brackets become arrays; values stay strings (Stripe coerces per parameter).
 */
export type FormValue = string | FormValue[] | { [key: string]: FormValue };

export function parseStripeForm(body: string): Record<string, FormValue> {
  const root: Record<string, FormValue> = {};
  if (body === '') return root;
  for (const pair of body.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const rawKey = decodeURIComponent((eq < 0 ? pair : pair.slice(0, eq)).replace(/\+/g, ' '));
    const value = eq < 0 ? '' : decodeURIComponent(pair.slice(eq + 1).replace(/\+/g, ' '));
    const head = rawKey.split('[', 1)[0];
    const path = [head, ...[...rawKey.slice(head.length).matchAll(/\[([^\]]*)\]/g)].map((m) => m[1])];
    if (path.length > 8) throw new Error(`parameter ${head} is nested too deeply`);
    let node: Record<string, FormValue> | FormValue[] = root;
    for (let i = 0; i < path.length; i++) {
      const key = path[i];
      const last = i === path.length - 1;
      const nextIsIndex = !last && /^\d*$/.test(path[i + 1]);
      if (Array.isArray(node)) {
        const idx = key === '' ? node.length : Number(key);
        if (last) node[idx] = value;
        else node = (node[idx] ??= nextIsIndex ? [] : {}) as Record<string, FormValue> | FormValue[];
      } else {
        if (key === '__proto__' || key === 'constructor' || key === 'prototype') throw new Error('bad parameter name');
        if (last) node[key] = value;
        else node = (node[key] ??= nextIsIndex ? [] : {}) as Record<string, FormValue> | FormValue[];
      }
    }
  }
  return root;
}
