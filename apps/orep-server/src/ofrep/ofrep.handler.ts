import { createHash } from 'node:crypto';
import { checkEvaluationContext, contextFromOpenFeature, type EvaluationContext } from '@flagship/flag-evaluation';
import { CommonProblems, exceedsJsonDepth, MAX_JSON_DEPTH } from '@flagship/problem-details';
import { type Exchange, etagMatches, isPlainObject } from '@flagship/lean-http';
import { type Caller, visibleTo } from '../keys/orep-keys';
import type { OfrepPush } from '../push/ofrep-push';
import type { FlagSource } from '../sources/flag-source';
import { evaluationError, failure, OfrepResponses } from './ofrep-responses';

type ParsedRequest =
  | { ok: true; context: EvaluationContext; keyMissing: boolean }
  | { ok: false; errorCode: 'PARSE_ERROR' | 'INVALID_CONTEXT'; details: string };

/**
 * `{context?}`, OFREP's request body. No body at all is an empty context (the protocol makes the
 * body optional); anything that is not a JSON object is PARSE_ERROR. The context is OpenFeature's
 * flat one, mapped onto a LaunchDarkly context (openFeatureContext); one that cannot be is
 * INVALID_CONTEXT naming the field. A context without a key is not refused here: `keyMissing` says
 * so, and OFREP answers it TARGETING_KEY_MISSING, its own code for it.
 */
export function parseOfrepRequest(text: string): ParsedRequest {
  let body: unknown = {};
  if (text !== '') {
    // Bounded before parsing, as every app's body parser does: the evaluator recurses into values.
    if (exceedsJsonDepth(text)) return { ok: false, errorCode: 'PARSE_ERROR', details: `the request body nests deeper than ${MAX_JSON_DEPTH} levels` };
    try {
      body = JSON.parse(text);
    } catch {
      return { ok: false, errorCode: 'PARSE_ERROR', details: 'the request body is not valid JSON' };
    }
  }
  if (!isPlainObject(body)) return { ok: false, errorCode: 'PARSE_ERROR', details: 'the request body must be a JSON object' };
  const mapped = openFeatureContext(body.context ?? {});
  if (!mapped.ok) return { ok: false, errorCode: 'INVALID_CONTEXT', details: mapped.details };
  return { ok: true, context: mapped.context, keyMissing: mapped.keyMissing };
}

/**
 * OpenFeature's flat evaluation context as a LaunchDarkly context, the mapping LaunchDarkly's
 * OpenFeature providers use (contextFromOpenFeature): `targetingKey` is the key, `kind` selects the
 * kind, and `kind: "multi"` nests one object per kind (each with its own `targetingKey` or `key`).
 * What makes no valid context is refused, naming the field as the caller wrote it (`context.
 * organization.targetingKey`); a single-kind context without a key is `keyMissing` (the evaluator
 * answers it USER_NOT_SPECIFIED; callers say TARGETING_KEY_MISSING). Shared with the seed's
 * `/v1/flags/{key}/evaluate`, whose context is OpenFeature's too.
 */
export function openFeatureContext(
  flat: unknown,
): { ok: true; context: EvaluationContext; keyMissing: boolean } | { ok: false; field: string; message: string; details: string } {
  const refuse = (field: string, message: string) => ({ ok: false as const, field, message, details: `${field} ${message}` });
  if (!isPlainObject(flat)) return refuse('context', 'must be a JSON object');
  if (flat.targetingKey !== undefined && typeof flat.targetingKey !== 'string') return refuse('context.targetingKey', 'must be a string');
  const context = contextFromOpenFeature(flat);
  const problem = checkEvaluationContext(context);
  if (problem === undefined) return { ok: true, context, keyMissing: false };
  if (problem.path === 'key') return { ok: true, context, keyMissing: true };
  // A nested kind's key is its targetingKey in OpenFeature's terms (`key` is taken too).
  const path = problem.path.endsWith('.key') ? `${problem.path.slice(0, -'key'.length)}targetingKey` : problem.path;
  const message = problem.path.endsWith('.key') ? 'must be a non-empty string (the key of that kind; key is taken too)' : problem.message;
  return refuse(path === '' ? 'context' : `context.${path}`, message);
}

/**
 * The OpenFeature Remote Evaluation Protocol (open-feature/protocol, service/openapi.yaml): single
 * and bulk evaluation, and the optional configuration endpoint. Authentication, rate limiting and
 * body reading happen before (fast-path.router.ts).
 */
export class OfrepHandler {
  private readonly responses = new OfrepResponses();

  /** `push`: OFREP push (ADR-0008) is on; the bulk answer names its SSE stream. */
  constructor(
    private readonly source: FlagSource,
    private readonly push?: OfrepPush,
  ) {}

  /** Whether flags are loaded (before, every OFREP route answers 503). */
  get ready(): boolean {
    return this.source.liveSet !== null;
  }

  /** POST /ofrep/v1/evaluate/flags/{key}; a flag `caller` may not see is answered exactly as a missing one. */
  evaluateOne(x: Exchange, key: string, text: string, caller: Caller): void {
    const request = parseOfrepRequest(text);
    if (!request.ok) return x.json(400, failure(key, request.errorCode, request.details));
    const set = this.source.liveSet;
    if (set === null) return notReady(x);
    const flag = set.get(key);
    if (flag === undefined || !visibleTo(flag, caller)) return x.json(404, failure(key, 'FLAG_NOT_FOUND', `no flag '${key}'`));
    const result = set.evaluate(flag, request.context);
    this.source.evaluated?.(key);
    if (result.reason === 'ERROR') {
      const error = evaluationError(flag, result);
      return x.json(400, failure(key, error.code, error.details));
    }
    x.json(200, this.responses.success(flag, result));
  }

  /**
   * POST /ofrep/v1/evaluate/flags: every flag for one context. The ETag is a digest of the answer,
   * so a client polling with If-None-Match gets 304 exactly when nothing it would see changed,
   * whatever else changed in the flags. With push on, the answer also names the SSE stream
   * (`eventStreams`, and `refreshConnections` as the ADR first named it), and a re-fetch that an
   * event triggered may be refused a 304 (OfrepPush.allowsNotModified). A client-side key's answer
   * holds only the flags available to it (and a stream URL of its own), so its ETag is its own too.
   */
  evaluateAll(x: Exchange, text: string, caller: Caller): void {
    const request = parseOfrepRequest(text);
    if (!request.ok) return x.json(400, JSON.stringify({ errorCode: request.errorCode, errorDetails: request.details }));
    const set = this.source.liveSet;
    if (set === null) return notReady(x);
    // Every flag would fail alike (the evaluator refuses a context without a key), so say it once.
    if (request.keyMissing) {
      return x.json(
        400,
        JSON.stringify({ errorCode: 'TARGETING_KEY_MISSING', errorDetails: 'the context has no targetingKey (nor key or userId) to evaluate with' }),
      );
    }
    const items: string[] = [];
    const evaluated = this.source.evaluated?.bind(this.source);
    for (const flag of set.values()) {
      if (!visibleTo(flag, caller)) continue;
      items.push(this.responses.bulkItem(flag, set.evaluate(flag, request.context)));
      evaluated?.(flag.key);
    }
    const push = this.push;
    let body: string;
    if (push === undefined) body = `{"flags":[${items.join(',')}]}`;
    else {
      const streams = push.streamsJson(x.req, caller);
      body = `{"flags":[${items.join(',')}],"eventStreams":${streams},"refreshConnections":${streams}}`;
    }
    // The digest covers the stream URL too: when its token is renewed the client gets the new URL.
    const etag = `"${createHash('sha1').update(body).digest('base64url')}"`;
    if (etagMatches(x.req.headers['if-none-match'], etag) && (push === undefined || push.allowsNotModified(x.req.url))) return x.empty(304, { etag });
    x.json(200, body, { etag });
  }

  /** GET /ofrep/v1/configuration (an OFREP extension): what providers may rely on. */
  configuration(x: Exchange): void {
    x.json(200, CONFIGURATION);
  }
}

const CONFIGURATION = JSON.stringify({
  name: 'flagship orep-server',
  capabilities: {
    cacheInvalidation: { polling: { enabled: true, minPollingIntervalMs: 1000 } },
    flagEvaluation: { supportedTypes: ['boolean', 'string', 'int', 'float', 'object'] },
  },
});

export function notReady(x: Exchange): void {
  x.problem(CommonProblems['not-ready'], 'No flags are loaded yet; try again shortly.', undefined, { 'retry-after': '1' });
}
