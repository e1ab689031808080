import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import { type Exchange, JSON_TYPE } from '@flagship/lean-http';
import { GatewayError } from './gateway.errors';
import type { GatewayMetrics } from './gateway.metrics';
import { costOf, type ModelEntry } from './models/model-catalogue';
import type { Dialect, GatewayRoute } from './dialects/dialect';
import { anthropicMessages } from './dialects/anthropic-messages';
import { openAiResponses } from './dialects/openai-responses';
import { type GatewayRequest, parseGatewayRequest, parseJsonObject, requestOf, type RequestRules } from './openai/openai-request';
import type { EntitlementStep } from './pipeline/entitlement.step';
import type { MediaRelease, MediaStep } from './pipeline/media.step';
import type { ProductKeyStep } from './pipeline/product-key.step';
import type { CallOutcome, ProviderCallStep } from './pipeline/provider-call.step';
import type { ProviderPermissionStep } from './pipeline/provider-permission.step';
import type { RateLimitStep, Taken } from './pipeline/rate-limit.step';
import type { ReservationStep } from './pipeline/reservation.step';
import type { SettleStep } from './pipeline/settle.step';
import type { TenantStep } from './pipeline/tenant.step';
import type { TokenStep } from './pipeline/token.step';
import type { Reservation } from './pipeline/ledger.types';
import type { CallCutter, ProviderClient } from './providers/provider.types';

/** The routes answered in another API than OpenAI's, translated to and from chat completions. */
const DIALECTS: Readonly<Partial<Record<GatewayRoute, Dialect>>> = { messages: anthropicMessages, responses: openAiResponses };

export interface GatewaySteps {
  token: TokenStep;
  productKey: ProductKeyStep;
  tenant: TenantStep;
  entitlement: EntitlementStep;
  providerPermission: ProviderPermissionStep;
  rateLimit: RateLimitStep;
  reservation: ReservationStep;
  media: MediaStep;
  providerCall: ProviderCallStep;
  settle: SettleStep;
}

export type GatewayHandlerOptions = RequestRules;

/**
 * The proxy routes: the pipeline's steps in the seed's order (token -> product key -> tenant ->
 * entitlement -> provider permission -> rate limit -> reservation and pending row -> images fetched
 * for providers that would fetch them -> provider -> settle), every refusal in OpenAI's error body
 * with the rate-limit headers known by then. The rate limit (a Redis round trip) and the reservation
 * (a Postgres one) run at the same time: one round trip's wait fewer per request, the refusals in
 * the same order as before.
 */
export class GatewayHandler {
  /** Set at shutdown: new requests are refused (503), readiness fails. */
  private draining = false;
  /** Requests under way, each with its call's off switch. */
  private readonly running = new Set<CallCutter>();
  private idle: (() => void) | undefined;

  constructor(
    private readonly steps: GatewaySteps,
    private readonly providers: ProviderClient,
    private readonly metrics: GatewayMetrics,
    private readonly options: GatewayHandlerOptions,
  ) {}

  /** Requests under way (from the token check to the answer's end). */
  get inFlight(): number {
    return this.running.size;
  }

  get isDraining(): boolean {
    return this.draining;
  }

  /**
   * Shutdown: refuses new requests from now on (503, `retry-after`), lets those under way finish for
   * up to `cutAfterMs`, then cuts the rest (their calls stop; what was sent is billed, delivered plus
   * estimated, and their rows settled) and waits up to `settleMs` for them to end.
   * Resolves true when none was cut.
   */
  async drain(cutAfterMs: number, settleMs: number): Promise<boolean> {
    this.draining = true;
    if (await this.quiet(cutAfterMs)) return true;
    for (const cutter of this.running) {
      cutter.cut = true;
      cutter.stop?.();
    }
    await this.quiet(settleMs);
    return false;
  }

  /** Whether no request is under way, now or within `ms`. */
  private quiet(ms: number): Promise<boolean> {
    if (this.running.size === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.idle = undefined;
        resolve(false);
      }, ms);
      this.idle = () => {
        clearTimeout(timer);
        this.idle = undefined;
        resolve(true);
      };
    });
  }

  /**
   * The proxy routes' guard, run before their bodies are read: a gateway shutting down, or a caller
   * without a valid access token, is answered at once, so the body (up to 1 MiB) is never read nor
   * buffered for it. A token verified before is checked without I/O (TokenStep.cached); another is
   * verified first, its body waiting unread meanwhile. serve() checks the token again (from the cache).
   */
  guard(x: Exchange, endpoint: GatewayRoute): boolean | Promise<boolean> {
    if (this.draining) {
      this.refuseDraining(x);
      return false;
    }
    const headers = endpoint === 'messages' ? anthropicAuth(x.req.headers) : x.req.headers;
    try {
      if (this.steps.token.cached(headers) !== undefined) return true;
    } catch (err) {
      return this.refuse(x, err, {});
    }
    return this.steps.token.verify(headers).then(
      () => true,
      (err: unknown) => this.refuse(x, err, {}),
    );
  }

  /** A GatewayError in the route's error body (false: the request stops); anything else is thrown on. */
  private refuse(x: Exchange, err: unknown, headers: OutgoingHttpHeaders): false {
    if (!(err instanceof GatewayError)) throw err;
    x.error({ status: err.status, code: err.code, message: err.message, param: err.param }, { ...headers, ...err.headers });
    return false;
  }

  private refuseDraining(x: Exchange): void {
    x.error(
      { status: 503, code: 'service_unavailable', message: 'The gateway is restarting; try again (another replica will answer).', param: null },
      { 'retry-after': '1', connection: 'close' },
    );
  }

  async completion(x: Exchange, endpoint: GatewayRoute, text: string): Promise<void> {
    if (this.draining) return this.refuseDraining(x);
    const cutter: CallCutter = { cut: false, stop: undefined };
    this.running.add(cutter);
    try {
      await this.serve(x, endpoint, text, cutter);
    } finally {
      this.running.delete(cutter);
      if (this.running.size === 0) this.idle?.();
    }
  }

  private async serve(x: Exchange, endpoint: GatewayRoute, text: string, cutter: CallCutter): Promise<void> {
    const s = this.steps;
    let headers: OutgoingHttpHeaders = {};
    try {
      const principal = await s.token.verify(endpoint === 'messages' ? anthropicAuth(x.req.headers) : x.req.headers);
      const product = s.productKey.resolve(x.req.headers);
      const request = this.parse(endpoint, text);
      const tenant = await s.tenant.resolve(principal);
      const rating = s.entitlement.check(principal, product, tenant);
      const providers = s.providerPermission.resolve(x.req.headers, product.key, tenant);
      // The rate limit (Redis) and the reservation (Postgres) at the same time, not one after the
      // other: the refusals keep their order (429 before 402), a reservation made for a request the
      // rate limit refuses is taken back, and the tokens counted for one the reservation refuses are given back.
      const limited = s.rateLimit.take(principal.clientId, request.inputTokens + request.outputTokens, tenant);
      const reserving = s.reservation.reserve({
        tenantId: tenant.id,
        clientId: principal.clientId,
        productKey: product.key,
        provider: providers[0]!,
        model: request.model.id,
        endpoint: request.route,
        stream: request.stream,
        estimate: rating.zeroRatedReason === null ? costOf(request.model, request.inputTokens, request.outputTokens) : 0,
        zeroRatedReason: rating.zeroRatedReason,
        requestId: x.requestId,
        // Already bounded (service-kit's clientRequestIdOf): a sane token or nothing.
        clientRequestId: x.clientRequestId ?? null,
        // The prices are decided here, at admission, and recorded on the row; the settlement below
        // charges the same entry's prices (request.model), never a later catalogue's.
        inputPer1k: request.model.inputPer1k,
        outputPer1k: request.model.outputPer1k,
        cachedInputPer1k: request.model.cachedInputPer1k ?? null,
      });
      // Its failure is thrown below once the rate limit has answered; meanwhile it is not an unhandled rejection.
      reserving.catch(() => undefined);
      let taken: Taken;
      try {
        taken = await limited;
      } catch (err) {
        void s.settle.release(reserving);
        throw err;
      }
      headers = taken.headers;
      let reservation: Reservation;
      try {
        reservation = await reserving;
      } catch (err) {
        headers = s.rateLimit.refuse(taken);
        throw err;
      }
      // Images the provider would fetch itself are fetched here, once the request is admitted (and
      // paid for); a refusal takes the reservation and the tokens counted back, as any refusal does.
      let media: MediaRelease | undefined;
      if (s.media.needed(request, providers)) {
        try {
          media = await s.media.inline(request);
        } catch (err) {
          void s.settle.release(reserving);
          headers = s.rateLimit.refuse(taken);
          throw err;
        }
      }
      // Stamped while the provider is called, waited for before the answer (see ProviderCallStep).
      const stamp = s.reservation.upstreamCalled(reservation);
      const beforeCall = x.elapsedMs();
      let settled = false;
      const settle = (outcome: CallOutcome): void => {
        if (settled) return;
        settled = true;
        this.complete(reservation, request.model, outcome, x.elapsedMs() - beforeCall);
      };
      try {
        const outcome = await s.providerCall.call(
          x,
          request,
          providers,
          headers,
          (upstreamMs) => {
            const overhead = upstreamMs > 0 ? x.elapsedMs() - upstreamMs : beforeCall;
            this.metrics.overheadMs(endpoint, overhead);
            return overhead;
          },
          settle,
          stamp,
          cutter,
        );
        settle(outcome);
      } catch (err) {
        settle({ provider: providers[0]!, status: 'failed', usage: { inputTokens: 0, outputTokens: 0, estimated: false }, upstreamMs: 0, errorCode: 'internal_error', outcome: 'internal_error' });
        throw err;
      } finally {
        media?.();
      }
    } catch (err) {
      this.refuse(x, err, headers);
    }
  }

  /** The request of a route's body: OpenAI's as it is, another API's through the chat body its dialect makes of it. */
  private parse(route: GatewayRoute, text: string): GatewayRequest {
    const o = this.options;
    const dialect = DIALECTS[route];
    if (dialect === undefined) return parseGatewayRequest(route as 'chat.completions' | 'embeddings', text, o);
    const body = parseJsonObject(text);
    const chat = dialect.toChat(body);
    // The chat body's bytes bound its input as a Chat Completions request's do (estimateInput).
    const request = requestOf('chat.completions', chat, Buffer.byteLength(JSON.stringify(chat), 'utf8'), o);
    return { ...request, route, dialect, original: body };
  }

  /** GET /v1/models: the configured catalogue, each model under its provider (OpenAI's list shape). */
  async models(x: Exchange): Promise<void> {
    try {
      await this.steps.token.verify(x.req.headers);
    } catch (err) {
      this.refuse(x, err, {});
      return;
    }
    const data = [...this.options.models.values()].map((m) => ({ id: m.id, object: 'model', created: 0, owned_by: m.provider }));
    x.send(200, JSON_TYPE, { 'x-gateway-overhead-ms': x.elapsedMs().toFixed(2) }, JSON.stringify({ object: 'list', data }));
  }

  private complete(reservation: Reservation, model: ModelEntry, outcome: CallOutcome, latencyMs: number): void {
    const cachedTokens = outcome.usage.cachedTokens ?? 0;
    const debit = reservation.zeroRatedReason === null ? costOf(model, outcome.usage.inputTokens, outcome.usage.outputTokens, cachedTokens) : 0;
    const labels = { product: reservation.productKey, provider: outcome.provider, model: model.id };
    // The ledger marks the row too (SETTLE's `overrun`); the counter is what an alert can watch.
    if (debit > reservation.estimate) this.metrics.overrun(labels, reservation.estimate, debit);
    void this.steps.settle.settle({
      id: reservation.id,
      tenantId: reservation.tenantId,
      status: outcome.status,
      inputTokens: outcome.usage.inputTokens,
      outputTokens: outcome.usage.outputTokens,
      cachedTokens,
      debit,
      provider: outcome.provider,
      latencyMs: Math.round(latencyMs),
      usageEstimated: outcome.usage.estimated,
      errorCode: outcome.errorCode,
    });
    this.metrics.completed(
      labels,
      reservation.endpoint,
      outcome.outcome,
      outcome.usage,
      debit,
      outcome.upstreamMs,
    );
  }
}

/**
 * Anthropic's SDKs send the key as `x-api-key` (`apiKey`) or `Authorization: Bearer` (`authToken`):
 * either carries the gateway's access token; Authorization wins when both are sent.
 */
function anthropicAuth(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const key = headers['x-api-key'];
  if (headers.authorization !== undefined || typeof key !== 'string' || key === '') return headers;
  return { ...headers, authorization: `Bearer ${key}` };
}
