import type { RequestListener } from 'node:http';
import { CommonProblems } from '@flagship/problem-details';
import { addressBucket, clientAddress } from '@flagship/service-kit';
import { type BufferedMetrics, type Exchange, FixedWindowRateLimiter, LeanRouter } from '@flagship/lean-http';
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
  /** CONTRACT.md: 1 MiB. */
  bodyLimit: number;
}

/** OFREP answers auth and rate-limit refusals with no body; the seed endpoint with problems. */
type Style = 'ofrep' | 'seed';

/**
 * orep-server's routes on the shared lean HTTP layer (@flagship/lean-http): the evaluation paths
 * and /readyz are answered on node:http, everything else by Express. What is orep's own: its keys
 * (the server token, and client-side keys that see fewer flags), the per-address limiter, and
 * OFREP's bodiless 401/429.
 */
export function fastPathRouter(
  ofrep: OfrepHandler,
  seed: EvaluateHandler,
  readiness: OrepReadiness,
  metrics: BufferedMetrics,
  options: FastPathOptions,
  fallback: RequestListener,
  /** OFREP push (ADR-0008); undefined when OREP_SSE_MAX_CONNECTIONS is 0. */
  push?: OfrepPush,
): LeanRouter {
  const limiter = new FixedWindowRateLimiter(options.rateLimitRps);
  /** Who each admitted request is, from its guard to its handler. */
  const admitted = new WeakMap<Exchange, StreamAccess>();
  const callerOf = (x: Exchange): Caller => admitted.get(x)!.caller;

  /** Rate limit (before authentication, so that guessing keys is throttled too), then the key. */
  const guard =
    (style: Style, authenticate: (x: Exchange) => StreamAccess | 'missing' | 'invalid' = (x) => accessOf(options.keys.identify(x.req.headers))) =>
    (x: Exchange): boolean => {
      if (limiter.enabled) {
        const wait = limiter.take(addressBucket(clientAddress(x.req)));
        if (wait > 0) {
          const headers = { 'retry-after': String(wait) };
          if (style === 'ofrep') x.empty(429, headers);
          else x.problem(CommonProblems['rate-limited'], `Too many requests; try again in ${wait} s.`, undefined, headers);
          return false;
        }
      }
      const auth = authenticate(x);
      if (typeof auth !== 'string') {
        admitted.set(x, auth);
        return true;
      }
      const headers = { 'www-authenticate': 'Bearer' };
      if (style === 'ofrep') x.empty(401, headers);
      else {
        x.problem(
          CommonProblems.unauthorized,
          auth === 'missing' ? 'Send Authorization: Bearer <OREP_AUTH_TOKEN>.' : 'The token is not valid.',
          undefined,
          headers,
        );
      }
      return false;
    };
  const ofrepGuard = guard('ofrep');

  const router = new LeanRouter({ metrics, fallback, bodyLimit: options.bodyLimit, name: 'FastPath' })
    .add({ path: '/ofrep/v1/evaluate/flags', method: 'POST', guard: ofrepGuard, run: (x, _key, text) => ofrep.evaluateAll(x, text, callerOf(x)) })
    .add({ path: '/ofrep/v1/evaluate/flags/:key', method: 'POST', guard: ofrepGuard, run: (x, key, text) => ofrep.evaluateOne(x, key, text, callerOf(x)) })
    .add({ path: '/v1/flags/:flagKey/evaluate', method: 'POST', guard: guard('seed'), run: (x, key, text) => seed.evaluate(x, key, text, callerOf(x)) })
    .add({ path: '/ofrep/v1/configuration', method: 'GET', guard: ofrepGuard, run: (x) => ofrep.configuration(x) })
    .add({ path: '/readyz', method: 'GET', otherMethods: 'fallback', schedule: 'now', run: (x) => readiness.answer(x) });
  if (push !== undefined) {
    // The header key, or the URL token a browser's EventSource carries (OfrepPush.authenticate).
    const sseGuard = guard('ofrep', (x) => push.authenticate(x));
    router.add({
      path: SSE_PATH,
      method: 'GET',
      guard: sseGuard,
      schedule: 'now',
      run: (x) => (ofrep.ready ? push.open(x, admitted.get(x)!) : notReady(x)),
    });
  }
  return router;
}

function accessOf(identified: Caller | 'missing' | 'invalid'): StreamAccess | 'missing' | 'invalid' {
  return typeof identified === 'string' ? identified : { caller: identified };
}
