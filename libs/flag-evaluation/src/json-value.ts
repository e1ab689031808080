import type { FlagType, JsonValue } from './types';

/**
 * JSON values nested deeper than this are refused. Stored flags come from bounded API bodies, and a
 * bound keeps every walk below recursion-safe (a cyclic object simply exceeds it).
 */
export const MAX_JSON_DEPTH = 64;

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** True when `value` is a JSON value: finite numbers, plain objects and arrays, no undefined. */
export function isJsonValue(value: unknown, depth = 0): value is JsonValue {
  switch (typeof value) {
    case 'boolean':
    case 'string':
      return true;
    case 'number':
      return Number.isFinite(value);
    case 'object': {
      if (value === null) return true;
      if (depth >= MAX_JSON_DEPTH) return false;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) if (!isJsonValue(value[i], depth + 1)) return false;
        return true;
      }
      if (!isPlainObject(value)) return false;
      for (const k of Object.keys(value)) if (!isJsonValue(value[k], depth + 1)) return false;
      return true;
    }
    default:
      return false;
  }
}

/** Whether `value` may be a variation value / default value of a flag of `type`. */
export function valueMatchesType(type: FlagType, value: unknown): boolean {
  switch (type) {
    case 'boolean':
      return typeof value === 'boolean';
    case 'string':
      return typeof value === 'string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'json':
      // The seed calls json "a JSON object"; arrays are objects in JSON Schema's sense too.
      return typeof value === 'object' && value !== null && isJsonValue(value);
    default:
      return false;
  }
}

/**
 * A deep, frozen copy of a JSON value, or undefined when `value` is not JSON. Results share their
 * values across calls, so a caller mutating one must not be able to change the flag.
 */
export function toFrozenJson(value: unknown, depth = 0): JsonValue | undefined {
  switch (typeof value) {
    case 'boolean':
    case 'string':
      return value;
    case 'number':
      return Number.isFinite(value) ? value : undefined;
    case 'object': {
      if (value === null) return null;
      if (depth >= MAX_JSON_DEPTH) return undefined;
      if (Array.isArray(value)) {
        const out: JsonValue[] = new Array<JsonValue>(value.length);
        for (let i = 0; i < value.length; i++) {
          const item = toFrozenJson(value[i], depth + 1);
          if (item === undefined) return undefined;
          out[i] = item;
        }
        return Object.freeze(out) as JsonValue[];
      }
      if (!isPlainObject(value)) return undefined;
      const out: { [k: string]: JsonValue } = {};
      for (const k of Object.keys(value)) {
        const item = toFrozenJson(value[k], depth + 1);
        if (item === undefined) return undefined;
        out[k] = item;
      }
      return Object.freeze(out);
    }
    default:
      return undefined;
  }
}

/**
 * Deep equality of two JSON values (LaunchDarkly's server SDKs compare JSON values structurally).
 * `expected` is a compiled, bounded clause value, so the walk is bounded even if `actual` is cyclic.
 */
export function jsonEquals(actual: unknown, expected: JsonValue): boolean {
  if (actual === expected) return true;
  if (typeof expected !== 'object' || expected === null || typeof actual !== 'object' || actual === null) return false;
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) return false;
    for (let i = 0; i < expected.length; i++) if (!jsonEquals(actual[i], expected[i] as JsonValue)) return false;
    return true;
  }
  if (Array.isArray(actual) || !isPlainObject(actual)) return false;
  const keys = Object.keys(expected);
  if (Object.keys(actual).length !== keys.length) return false;
  for (const k of keys) {
    if (!Object.hasOwn(actual, k) || !jsonEquals(actual[k], expected[k] as JsonValue)) return false;
  }
  return true;
}
