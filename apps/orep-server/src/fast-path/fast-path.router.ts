import { type Exchange, FixedWindowRateLimiter, route } from '@flagship/lean-http';
import { CommonProblems } from '@flagship/problem-details';
import { addressBucket, clientAddress } from '@flagship/service-kit';
import type { EvaluateHandler } from '../evaluate/evaluate.handler';
import type { Caller, OrepKeys } from '../keys/orep-keys';
import { notReady, type OfrepHandler } from '../ofrep/ofrep.handler';
import { type OfrepPush, SSE_PATH, type StreamAccess } from '../push/ofrep-push';
import type { OrepReadiness } from '../readiness/orep-readiness';

export interface FastPathOptions {
  /** The server token and the client-side keys in force. */
  keys: OrepKeys;
  /** Per client address (IPv6: per /64) per second; 0 = no limit. */
  rateLimitRps: number;
}

/** OFREP answers auth and rate-limit refusals with no body; the seed endpoint with problems. */
type Style = 'ofrep' | 'seed';

/**
 * What orep-server's routes run on: its handlers, and what is orep's own in front of them: its keys
 * (the server token, and client-side keys that see fewer flags), the per-address limiter, and
 * OFREP's bodiless 401/429.
 */
export class FastPath {
  private readonly limiter: FixedWindowRateLimiter;
  /** Who each admitted request is, from its guard to its handler. */
  private readonly admitted = new WeakMap<Exchange, StreamAccess>();

  constructor(
    readonly ofrep: OfrepHandler,
    readonly seed: EvaluateHandler,
    readonly readiness: OrepReadiness,
    private readonly options: FastPathOptions,
    /** OFREP push (ADR-0008); undefined when OREP_SSE_MAX_CONNECTIONS is 0. */
    readonly push?: OfrepPush,
  ) {
    this.limiter = new FixedWindowRateLimiter(options.rateLimitRps);
  }

  /** Rate limit (before authentication, so that guessing keys is throttled too), then the key. */
  admit(x: Exchange, style: Style, authenticate: (x: Exchange) => StreamAccess | 'missing' | 'invalid' = (r) => accessOf(this.options.keys.identify(r.req.headers))): boolean {
    if (this.limiter.enabled) {
      const wait = this.limiter.take(addressBucket(clientAddress(x.req)));
      if (wait > 0) {
        const headers = { 'retry-after': String(wait) };
        if (style === 'ofrep') x.empty(429, headers);
        else x.problem(CommonProblems['rate-limited'], `Too many requests; try again in ${wait} s.`, undefined, headers);
        return false;
      }
    }
    const auth = authenticate(x);
    if (typeof auth !== 'string') {
      this.admitted.set(x, auth);
      return true;
    }
    const headers = { 'www-authenticate': 'Bearer' };
    if (style === 'ofrep') x.empty(401, headers);
    else x.problem(CommonProblems.unauthorized, auth === 'missing' ? 'Send Authorization: Bearer <OREP_AUTH_TOKEN>.' : 'The token is not valid.', undefined, headers);
    return false;
  }

  /** The access its guard admitted the request with. */
  accessOf(x: Exchange): StreamAccess {
    return this.admitted.get(x)!;
  }

  callerOf(x: Exchange): Caller {
    return this.admitted.get(x)!.caller;
  }
}

const ofrepGuard = (x: Exchange, f: FastPath): boolean => f.admit(x, 'ofrep');

/**
 * orep-server's routes on the lean HTTP layer (@flagship/lean-http): the evaluation paths, /readyz
 * and the push stream are answered on node:http, everything else by Express.
 */
const ROUTES = [
  route({ method: 'POST', path: '/ofrep/v1/evaluate/flags', guard: ofrepGuard, handle: (x, _p, text, f: FastPath) => f.ofrep.evaluateAll(x, text, f.callerOf(x)) }),
  route({ method: 'POST', path: '/ofrep/v1/evaluate/flags/:key', guard: ofrepGuard, handle: (x, p, text, f: FastPath) => f.ofrep.evaluateOne(x, p['key']!, text, f.callerOf(x)) }),
  route({
    method: 'POST',
    path: '/v1/flags/:flagKey/evaluate',
    guard: (x, f: FastPath) => f.admit(x, 'seed'),
    handle: (x, p, text, f: FastPath) => f.seed.evaluate(x, p['flagKey']!, text, f.callerOf(x)),
  }),
  route({ method: 'GET', path: '/ofrep/v1/configuration', guard: ofrepGuard, handle: (x, _p, _text, f: FastPath) => f.ofrep.configuration(x) }),
  route({ method: 'GET', path: '/readyz', otherMethods: 'fallback', schedule: 'now', handle: (x, _p, _text, f: FastPath) => f.readiness.answer(x) }),
];

/** The header key, or the URL token a browser's EventSource carries (OfrepPush.authenticate). */
const PUSH_ROUTE = route({
  method: 'GET',
  path: SSE_PATH,
  schedule: 'now',
  guard: (x, f: FastPath) => f.admit(x, 'ofrep', (r) => f.push!.authenticate(r)),
  handle: (x, _p, _text, f: FastPath) => (f.ofrep.ready ? f.push!.open(x, f.accessOf(x)) : notReady(x)),
});

/** The routes of a FastPath: with push on, its stream too. */
export function fastPathRoutes(fastPath: FastPath): ReadonlyArray<typeof PUSH_ROUTE> {
  return fastPath.push === undefined ? ROUTES : [...ROUTES, PUSH_ROUTE];
}

function accessOf(identified: Caller | 'missing' | 'invalid'): StreamAccess | 'missing' | 'invalid' {
  return typeof identified === 'string' ? identified : { caller: identified };
}
