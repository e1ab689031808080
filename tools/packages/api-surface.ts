/**
 * The part of the management API's OpenAPI document a client depends on, and the changes to it that
 * break a client built against an older one. The published packages record the surface their version
 * was made against (libs/sdk/api-surface.json); api-surface.spec.ts fails when the current document
 * breaks it without a version that npm's caret range of the recorded one excludes (a major bump, or a
 * minor one below 1.0.0).
 *
 * Checked: operations (method and path), parameters, the JSON request body, and the JSON bodies of the
 * success (2xx) responses, with their schemas resolved through $ref. Not checked: error responses
 * (all problem details), descriptions and examples, and value constraints (lengths, patterns, ranges).
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type Schema = { [key: string]: Json };

export interface OperationSurface {
  /** `query:limit`, `header:X-Tenant-ID`, `path:key` -> whether required and the value's schema. */
  parameters: Record<string, { required: boolean; schema: Schema }>;
  requestBody?: { required: boolean; schema: Schema };
  /** Success statuses -> the JSON body's schema (null: no JSON body). */
  responses: Record<string, Schema | null>;
}

export interface ApiSurface {
  /** `GET /api/flags/{key}` -> what a client sends and reads there. */
  operations: Record<string, OperationSurface>;
  /** The components a $ref names, pruned as the operations' schemas are. */
  schemas: Record<string, Schema>;
}

/** The recorded surface of a package version (libs/sdk/api-surface.json). */
export interface RecordedSurface extends ApiSurface {
  version: string;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];
/** The schema keywords that change what a client may send or read; the rest (descriptions, examples, bounds) are left out. */
const KEPT = ['$ref', 'type', 'format', 'enum', 'nullable', 'properties', 'required', 'items', 'oneOf', 'anyOf', 'allOf', 'additionalProperties'];

function prune(schema: Json | undefined): Schema {
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return {};
  const out: Schema = {};
  for (const key of KEPT) {
    const value = schema[key];
    if (value === undefined) continue;
    if (key === 'properties' && value && typeof value === 'object' && !Array.isArray(value)) {
      out[key] = Object.fromEntries(Object.keys(value).sort().map((name) => [name, prune(value[name])]));
    } else if (key === 'items' || (key === 'additionalProperties' && typeof value === 'object')) {
      out[key] = prune(value);
    } else if ((key === 'oneOf' || key === 'anyOf' || key === 'allOf') && Array.isArray(value)) {
      out[key] = value.map((member) => prune(member));
    } else if ((key === 'required' || key === 'enum') && Array.isArray(value)) {
      out[key] = [...value].sort((a, b) => String(a).localeCompare(String(b)));
    } else {
      out[key] = value;
    }
  }
  return out;
}

const jsonBody = (content: Json | undefined): Json | undefined =>
  content && typeof content === 'object' && !Array.isArray(content) ? (content['application/json'] as { schema?: Json } | undefined)?.schema : undefined;

/** The surface of an OpenAPI 3.0 document. */
export function apiSurface(document: { paths?: Record<string, Record<string, Json>>; components?: { schemas?: Record<string, Json> } }): ApiSurface {
  const operations: Record<string, OperationSurface> = {};
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method] as { parameters?: Json[]; requestBody?: { required?: boolean; content?: Json }; responses?: Record<string, { content?: Json }> } | undefined;
      if (!op) continue;
      const parameters: OperationSurface['parameters'] = {};
      for (const p of (op.parameters ?? []) as Array<{ in: string; name: string; required?: boolean; schema?: Json }>) {
        // HTTP header names are case-insensitive; a renamed capital is no change.
        const name = p.in === 'header' ? p.name.toLowerCase() : p.name;
        parameters[`${p.in}:${name}`] = { required: p.required === true, schema: prune(p.schema) };
      }
      const surface: OperationSurface = { parameters, responses: {} };
      const body = jsonBody(op.requestBody?.content);
      if (op.requestBody) surface.requestBody = { required: op.requestBody.required === true, schema: prune(body) };
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        if (!/^2\d\d$/.test(status)) continue;
        const schema = jsonBody(response.content);
        surface.responses[status] = schema === undefined ? null : prune(schema);
      }
      operations[`${method.toUpperCase()} ${path}`] = surface;
    }
  }
  const schemas = Object.fromEntries(Object.entries(document.components?.schemas ?? {}).map(([name, schema]) => [name, prune(schema)]));
  return { operations: sortKeys(operations), schemas: sortKeys(schemas) };
}

const sortKeys = <T>(record: Record<string, T>): Record<string, T> => Object.fromEntries(Object.keys(record).sort().map((k) => [k, record[k]]));

/** Which way a value travels: a client sends a request, reads a response; each tolerates different changes. */
type Direction = 'request' | 'response';

/** Every change from `before` to `after` that breaks a client built against `before`, each naming where. */
export function breakingChanges(before: ApiSurface, after: ApiSurface): string[] {
  const found: string[] = [];
  for (const [name, was] of Object.entries(before.operations)) {
    const now = after.operations[name];
    if (!now) {
      found.push(`${name}: operation removed`);
      continue;
    }
    for (const [param, p] of Object.entries(was.parameters)) {
      const q = now.parameters[param];
      if (!q) found.push(`${name} ${param}: parameter removed`);
      else {
        if (q.required && !p.required) found.push(`${name} ${param}: parameter became required`);
        compareSchemas(before, after, p.schema, q.schema, 'request', `${name} ${param}`, found, new Set());
      }
    }
    for (const [param, q] of Object.entries(now.parameters)) {
      if (!was.parameters[param] && q.required) found.push(`${name} ${param}: new required parameter`);
    }
    if (now.requestBody) {
      if (!was.requestBody) {
        if (now.requestBody.required) found.push(`${name} requestBody: new required request body`);
      } else {
        if (now.requestBody.required && !was.requestBody.required) found.push(`${name} requestBody: became required`);
        compareSchemas(before, after, was.requestBody.schema, now.requestBody.schema, 'request', `${name} requestBody`, found, new Set());
      }
    }
    for (const [status, schema] of Object.entries(was.responses)) {
      if (!(status in now.responses)) {
        found.push(`${name} ${status}: success response removed`);
        continue;
      }
      const next = now.responses[status];
      if (schema && !next) found.push(`${name} ${status}: JSON body removed`);
      else if (schema && next) compareSchemas(before, after, schema, next, 'response', `${name} ${status}`, found, new Set());
    }
  }
  return found;
}

/** A $ref resolved in its own surface, and allOf merged into one object schema. */
function resolve(surface: ApiSurface, schema: Schema): { schema: Schema; ref?: string } {
  const ref = typeof schema['$ref'] === 'string' ? schema['$ref'].replace('#/components/schemas/', '') : undefined;
  let resolved = ref !== undefined ? (surface.schemas[ref] ?? {}) : schema;
  if (Array.isArray(resolved['allOf'])) {
    const merged: Schema = { type: 'object', properties: {}, required: [] };
    for (const member of resolved['allOf'] as Schema[]) {
      const part = resolve(surface, member).schema;
      Object.assign(merged['properties'] as Schema, part['properties'] ?? {});
      (merged['required'] as string[]).push(...((part['required'] as string[] | undefined) ?? []));
      if (part['nullable'] === true) merged['nullable'] = true;
    }
    resolved = { ...merged, ...Object.fromEntries(Object.entries(resolved).filter(([k]) => k !== 'allOf')) };
  }
  return { schema: resolved, ref };
}

function typeOf(schema: Schema): string | undefined {
  if (typeof schema['type'] === 'string') return schema['type'] === 'integer' ? 'number-integer' : schema['type'];
  if (schema['properties'] !== undefined) return 'object';
  return undefined;
}

function compareSchemas(before: ApiSurface, after: ApiSurface, was: Schema, now: Schema, direction: Direction, at: string, found: string[], seen: Set<string>): void {
  const a = resolve(before, was);
  const b = resolve(after, now);
  if (a.ref !== undefined || b.ref !== undefined) {
    // Recursive schemas (JsonValue, nested rules) are compared once per pair and direction.
    const key = `${a.ref ?? JSON.stringify(was)}|${b.ref ?? JSON.stringify(now)}|${direction}`;
    if (seen.has(key)) return;
    seen = new Set(seen).add(key);
  }
  const x = a.schema;
  const y = b.schema;

  const tx = typeOf(x);
  const ty = typeOf(y);
  // An integer that became a number widens a request and narrows nothing a client holds; the reverse is a change.
  const widened = tx === 'number-integer' && ty === 'number' && direction === 'request';
  if (tx !== ty && !widened && !(tx === undefined && ty === undefined)) {
    found.push(`${at}: type changed from ${tx ?? 'any'} to ${ty ?? 'any'}`);
    return;
  }
  if (x['format'] !== y['format'] && x['format'] !== undefined) found.push(`${at}: format changed from ${String(x['format'])} to ${String(y['format'] ?? 'none')}`);
  if (direction === 'response' && y['nullable'] === true && x['nullable'] !== true) found.push(`${at}: may now be null`);
  if (direction === 'request' && x['nullable'] === true && y['nullable'] !== true) found.push(`${at}: no longer accepts null`);

  const ex = x['enum'] as Json[] | undefined;
  const ey = y['enum'] as Json[] | undefined;
  if (direction === 'request' && ex) {
    const removed = ey === undefined ? [] : ex.filter((v) => !ey.includes(v));
    if (removed.length > 0) found.push(`${at}: no longer accepts ${removed.map((v) => JSON.stringify(v)).join(', ')}`);
  }
  if (direction === 'request' && !ex && ey) found.push(`${at}: now accepts only ${ey.map((v) => JSON.stringify(v)).join(', ')}`);

  for (const union of ['oneOf', 'anyOf']) {
    const ux = x[union] as Schema[] | undefined;
    const uy = y[union] as Schema[] | undefined;
    if (!ux && !uy) continue;
    const sx = new Set((ux ?? []).map((m) => JSON.stringify(m)));
    const sy = new Set((uy ?? []).map((m) => JSON.stringify(m)));
    // A client reading a response must know every form it may get; a server must still take every form a client sends.
    const missing = direction === 'request' ? [...sx].filter((m) => !sy.has(m)) : [...sy].filter((m) => !sx.has(m));
    if (missing.length > 0) found.push(`${at}: ${union} ${direction === 'request' ? 'no longer accepts' : 'may now answer'} ${missing.join(' | ')}`);
  }

  if (x['items'] !== undefined || y['items'] !== undefined) {
    compareSchemas(before, after, (x['items'] as Schema) ?? {}, (y['items'] as Schema) ?? {}, direction, `${at}[]`, found, seen);
  }

  const px = (x['properties'] as Record<string, Schema> | undefined) ?? {};
  const py = (y['properties'] as Record<string, Schema> | undefined) ?? {};
  const rx = new Set((x['required'] as string[] | undefined) ?? []);
  const ry = new Set((y['required'] as string[] | undefined) ?? []);
  for (const [name, schema] of Object.entries(px)) {
    const field = `${at}.${name}`;
    const next = py[name];
    if (!next) {
      // A response field a client reads is gone; a request field a client sends is refused (the API answers 422 to an unknown field).
      found.push(`${field}: ${direction === 'response' ? 'response' : 'request'} field removed`);
      continue;
    }
    if (direction === 'response' && rx.has(name) && !ry.has(name)) found.push(`${field}: no longer always present`);
    if (direction === 'request' && ry.has(name) && !rx.has(name)) found.push(`${field}: became required`);
    compareSchemas(before, after, schema, next, direction, field, found, seen);
  }
  if (direction === 'request') {
    for (const name of Object.keys(py)) if (!px[name] && ry.has(name)) found.push(`${at}.${name}: new required request field`);
  }
  const ax = x['additionalProperties'];
  const ay = y['additionalProperties'];
  if (ax && typeof ax === 'object' && ay && typeof ay === 'object') compareSchemas(before, after, ax as Schema, ay as Schema, direction, `${at}{}`, found, seen);
}

/** `1.2.3` -> [1, 2, 3]; prereleases and build metadata are not used by these packages. */
export function parseVersion(version: string): [number, number, number] {
  const m = /^(\d+)\.(\d+)\.(\d+)$/.exec(version);
  if (!m) throw new Error(`not a release version (major.minor.patch): ${version}`);
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}

/**
 * Whether `next` may carry breaking changes from `recorded`: it leaves npm's caret range of the recorded
 * version (`^1.4.0` ends before 2.0.0, `^0.3.1` before 0.4.0), so no customer's range picks it up unasked.
 */
export function allowsBreakingChanges(recorded: string, next: string): boolean {
  const [a0, a1] = parseVersion(recorded);
  const [b0, b1] = parseVersion(next);
  if (a0 > 0) return b0 > a0;
  return b0 > 0 || b1 > a1;
}
