import {
  type CompiledFlag,
  type EvaluationContext,
  type EvaluationResult,
  FLAG_TYPES,
  type FlagType,
  type JsonValue,
  valueMatchesType,
} from '@flagship/flag-evaluation';
import { BodyRefusals, CommonProblems, ProblemException, type ProblemType, refuseDeepJson } from '@flagship/problem-details';
import { type Exchange, isPlainObject } from '@flagship/lean-http';
import { type Caller, visibleTo } from '../keys/orep-keys';
import { notReady, openFeatureContext } from '../ofrep/ofrep.handler';
import { evaluationError } from '../ofrep/ofrep-responses';
import type { FlagSource } from '../sources/flag-source';

export interface EvaluateRequest {
  defaultValue: JsonValue;
  type: FlagType;
  context: EvaluationContext;
}

type Parsed = { ok: true; request: EvaluateRequest } | { ok: false; problem: ProblemType; detail: string; errors?: Record<string, string> };

const ALLOWED_FIELDS = new Set(['defaultValue', 'type', 'context']);

/**
 * `{defaultValue, type, context}`, all three required, nothing else. `object` is accepted for `json`
 * (OpenFeature's name for it). Like OFREP's, this endpoint answers a bad body with 400, here as a
 * problem with `errors` per field.
 */
export function parseEvaluateRequest(text: string): Parsed {
  const invalid = CommonProblems['bad-request'];
  if (text === '') return { ok: false, problem: invalid, detail: 'A JSON body {defaultValue, type, context} is required.' };
  let body: unknown;
  try {
    // Bounded before parsing, as every app's body parser does: the evaluator recurses into values.
    refuseDeepJson(text);
    body = JSON.parse(text);
  } catch (err) {
    const refused = err instanceof ProblemException ? err : BodyRefusals.malformed();
    return { ok: false, problem: refused.problem, detail: refused.detail };
  }
  if (!isPlainObject(body)) {
    return { ok: false, problem: invalid, detail: 'The request body must be a JSON object.', errors: { body: 'must be a JSON object' } };
  }
  const errors: Record<string, string> = {};
  for (const field of Object.keys(body)) if (!ALLOWED_FIELDS.has(field)) errors[field] = 'is not an allowed field';
  const rawType = body.type === 'object' ? 'json' : body.type;
  const type = (FLAG_TYPES as readonly unknown[]).includes(rawType) ? (rawType as FlagType) : undefined;
  if (type === undefined) errors.type = `must be one of ${FLAG_TYPES.join(', ')}`;
  if (body.defaultValue === undefined) errors.defaultValue = 'is required';
  else if (type !== undefined && !valueMatchesType(type, body.defaultValue)) errors.defaultValue = `must be a value of type ${type}`;
  // OpenFeature's flat context, mapped as OFREP maps it; no key is still answered TARGETING_KEY_MISSING (200), as in the seed.
  let context: EvaluationContext | undefined;
  if (body.context === undefined) errors.context = 'is required';
  else {
    const mapped = openFeatureContext(body.context);
    if (mapped.ok) context = mapped.context;
    else errors[mapped.field] = mapped.message;
  }
  if (Object.keys(errors).length > 0) return { ok: false, problem: invalid, detail: 'The request body is invalid.', errors };
  return { ok: true, request: { defaultValue: body.defaultValue as JsonValue, type: type as FlagType, context: context! } };
}

/**
 * The seed's `POST /v1/flags/{flagKey}/evaluate` (CONTRACT.md section 6). Reasons are the
 * evaluator's own (OFF, PREREQUISITE_FAILED, TARGET_MATCH, RULE_MATCH, FALLTHROUGH, ERROR);
 * `variant` is the served variation's id, or null when the value is no variation's (a default or
 * off value outside the variations). Errors are answered with 200, the caller's defaultValue and an
 * OpenFeature error code: FLAG_NOT_FOUND, TYPE_MISMATCH, TARGETING_KEY_MISSING, GENERAL (malformed flag).
 */
export class EvaluateHandler {
  /** JSON of the answers that do not depend on the request (all but errors), cached per result. */
  private readonly bodies = new WeakMap<EvaluationResult, string>();

  constructor(private readonly source: FlagSource) {}

  /** A flag `caller` may not see (a client-side key's) is answered as a missing one. */
  evaluate(x: Exchange, key: string, text: string, caller: Caller): void {
    const parsed = parseEvaluateRequest(text);
    if (!parsed.ok) return x.problem(parsed.problem, parsed.detail, parsed.errors ? { errors: parsed.errors } : undefined);
    const { defaultValue, type, context } = parsed.request;
    const set = this.source.liveSet;
    if (set === null) return notReady(x);
    const flag = set.get(key);
    if (flag === undefined || !visibleTo(flag, caller)) return x.json(200, errorBody(key, defaultValue, false, 'FLAG_NOT_FOUND', `no flag '${key}'`));
    if (flag.type !== type) {
      return x.json(
        200,
        errorBody(key, defaultValue, flag.enabled, 'TYPE_MISMATCH', `flag '${key}' is of type ${flag.type ?? 'unknown'}, not ${type}`),
      );
    }
    const result = set.evaluate(flag, context);
    this.source.evaluated?.(key);
    if (result.reason === 'ERROR') {
      const error = evaluationError(flag, result);
      return x.json(200, errorBody(key, defaultValue, result.enabled, error.code, error.details));
    }
    x.json(200, this.body(flag, result));
  }

  private body(flag: CompiledFlag, result: EvaluationResult): string {
    let body = this.bodies.get(result);
    if (body === undefined) {
      body = JSON.stringify({
        key: flag.key,
        value: result.value,
        enabled: result.enabled,
        reason: result.reason,
        variant: result.variationId ?? null,
        ...(result.ruleId !== undefined ? { ruleId: result.ruleId } : {}),
      });
      this.bodies.set(result, body);
    }
    return body;
  }
}

function errorBody(key: string, defaultValue: JsonValue, enabled: boolean, errorCode: string, errorDetails: string): string {
  return JSON.stringify({ key, value: defaultValue, enabled, reason: 'ERROR', variant: null, errorCode, errorDetails });
}
