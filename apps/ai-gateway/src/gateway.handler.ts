import type { OutgoingHttpHeaders } from 'node:http';
import { type Exchange, JSON_TYPE } from '@flagship/lean-http';
import { chatCompletions } from './dialects/pass-through';
import type { Dialect } from './dialects/dialect';
import { sendError } from './dialects/dialects';
import { dependencyDown, GatewayError } from './gateway.errors';
import { parseFeedback } from './feedback/feedback';
import type { FeedbackRepository } from './feedback/feedback.repository';
import type { GatewayMetrics } from './gateway.metrics';
import { costOf } from './models/model-catalogue';
import type { RequestRules } from './openai/openai-request';
import type { CallOutcome } from './pipeline/call-outcome';
import { applyPlan, type BindingStep, type RoutePlan } from './pipeline/binding.step';
import type { EntitlementStep } from './pipeline/entitlement.step';
import type { Reservation } from './pipeline/ledger.types';
import type { MediaRelease, MediaStep } from './pipeline/media.step';
import type { ProductKeyStep } from './pipeline/product-key.step';
import type { ProviderCallStep } from './pipeline/provider-call.step';
import type { ProviderPermissionStep } from './pipeline/provider-permission.step';
import type { RateLimitStep, Taken } from './pipeline/rate-limit.step';
import type { ReservationStep } from './pipeline/reservation.step';
import type { SettleStep } from './pipeline/settle.step';
import type { TenantStep } from './pipeline/tenant.step';
import type { TokenStep } from './pipeline/token.step';
import type { CallCutter } from './providers/provider.types';

export interface GatewaySteps {
  token: TokenStep;
  productKey: ProductKeyStep;
  tenant: TenantStep;
  entitlement: EntitlementStep;
  providerPermission: ProviderPermissionStep;
  binding: BindingStep;
  rateLimit: RateLimitStep;
  reservation: ReservationStep;
  media: MediaStep;
  providerCall: ProviderCallStep;
  settle: SettleStep;
}

export type GatewayHandlerOptions = RequestRules;

/**
 * The proxy routes, one per API (Dialect): the pipeline's steps in the seed's order (token -> product
 * key -> tenant -> entitlement -> provider permission -> rate limit -> reservation and pending row ->
 * images fetched for providers that would fetch them -> provider -> settle), every refusal in the
 * route's API's error body with the rate-limit headers known by then. The rate limit (a Redis round
 * trip) and the reservation (a Postgres one) run at the same time: one round trip's wait fewer per
 * request, the refusals in the same order as before.
 */
export class GatewayHandler {
  /** Set at shutdown: new requests are refused (503), readiness fails. */
  private draining = false;
  /** Requests under way, each with its call's off switch. */
  private readonly running = new Set<CallCutter>();
  private idle: (() => void) | undefined;

  constructor(
    private readonly steps: GatewaySteps,
    private readonly metrics: GatewayMetrics,
    private readonly options: GatewayHandlerOptions,
    private readonly feedbackStore: Pick<FeedbackRepository, 'record'>,
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
  guard(x: Exchange, dialect: Dialect): boolean | Promise<boolean> {
    if (this.draining) {
      this.refuseDraining(x, dialect);
      return false;
    }
    const headers = dialect.credentials(x.req.headers);
    try {
      if (this.steps.token.cached(headers) !== undefined) return true;
    } catch (err) {
      return this.refuse(x, dialect, err, {});
    }
    return this.steps.token.verify(headers).then(
      () => true,
      (err: unknown) => this.refuse(x, dialect, err, {}),
    );
  }

  /** A GatewayError in the route's error body (false: the request stops); anything else is thrown on. */
  private refuse(x: Exchange, dialect: Dialect, err: unknown, headers: OutgoingHttpHeaders): false {
    if (!(err instanceof GatewayError)) throw err;
    sendError(x, dialect, { status: err.status, code: err.code, message: err.message, param: err.param }, { ...headers, ...err.headers });
    return false;
  }

  private refuseDraining(x: Exchange, dialect: Dialect): void {
    sendError(
      x,
      dialect,
      { status: 503, code: 'service_unavailable', message: 'The gateway is restarting; try again (another replica will answer).', param: null },
      { 'retry-after': '1', connection: 'close' },
    );
  }

  async completion(x: Exchange, dialect: Dialect, text: string): Promise<void> {
    if (this.draining) return this.refuseDraining(x, dialect);
    const cutter: CallCutter = { cut: false, stop: undefined };
    this.running.add(cutter);
    try {
      await this.serve(x, dialect, text, cutter);
    } finally {
      this.running.delete(cutter);
      if (this.running.size === 0) this.idle?.();
    }
  }

  private async serve(x: Exchange, dialect: Dialect, text: string, cutter: CallCutter): Promise<void> {
    const s = this.steps;
    let headers: OutgoingHttpHeaders = {};
    try {
      const principal = await s.token.verify(dialect.credentials(x.req.headers));
      const product = s.productKey.resolve(x.req.headers);
      const request = dialect.request(text, this.options);
      const tenant = await s.tenant.resolve(principal);
      const rating = s.entitlement.check(principal, product, tenant);
      const asked = s.providerPermission.resolve(x.req.headers, product.key, tenant);
      // A product key bound to a flag: the variation's model, provider and params (synchronous once warm).
      const planned = s.binding.plan(x.req.headers, { clientId: principal.clientId, productKey: product.key, tenant }, request, asked);
      const plan = planned instanceof Promise ? await planned : planned;
      let providers = plan?.providers ?? asked;
      const outputTokens = plan?.outputTokens ?? request.outputTokens;
      const reservationOf = (p: RoutePlan | undefined): Omit<Reservation, 'id'> => {
        const model = p?.model ?? request.model;
        return {
          tenantId: tenant.id,
          clientId: principal.clientId,
          productKey: product.key,
          provider: (p?.providers ?? asked)[0]!,
          model: model.id,
          endpoint: request.route,
          stream: request.stream,
          estimate: rating.zeroRatedReason === null ? costOf(model, request.inputTokens, p?.outputTokens ?? request.outputTokens) : 0,
          zeroRatedReason: rating.zeroRatedReason,
          requestId: x.requestId,
          // Already bounded (service-kit's clientRequestIdOf): a sane token or nothing.
          clientRequestId: x.clientRequestId ?? null,
          // The prices are decided here, at admission, and recorded on the row; the settlement charges
          // the row's prices (SettleStep.complete), never a later catalogue's.
          inputPer1k: model.inputPer1k,
          outputPer1k: model.outputPer1k,
          cachedInputPer1k: model.cachedInputPer1k ?? null,
          route: p?.attribution ?? null,
        };
      };
      // The rate limit (Redis) and the reservation (Postgres) at the same time, not one after the
      // other: the refusals keep their order (429 before 402), a reservation made for a request the rate
      // limit refuses is taken back, and the tokens counted for one the reservation refuses are given back.
      const limited = s.rateLimit.take(principal.clientId, request.inputTokens + outputTokens, tenant);
      // A variation with a spend cap is reserved under it; past it, the request goes to the control.
      let served = plan;
      const reserving =
        plan?.cap === undefined
          ? s.reservation.reserve(reservationOf(plan))
          : s.reservation.reserveUnderCap(reservationOf(plan), plan.cap).then((r) => r ?? s.reservation.reserve(reservationOf((served = plan.control))));
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
      if (served !== undefined) {
        applyPlan(request, served);
        providers = served.providers;
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
      const beforeCallMs = x.elapsedMs();
      let outcome: CallOutcome;
      try {
        outcome = await s.providerCall.call(x, { dialect, request, providers, headers, stamp, cutter, beforeCallMs });
      } catch (thrown) {
        outcome = { kind: 'crashed', provider: providers[0]!, thrown };
      } finally {
        media?.();
      }
      // The one settlement of a request that reached its provider step, whatever became of it.
      s.settle.complete(reservation, request, outcome, x.elapsedMs() - beforeCallMs);
      if (outcome.kind === 'failed') throw outcome.error;
      if (outcome.kind === 'crashed') throw outcome.thrown;
      if (outcome.overheadMs !== undefined) this.metrics.overheadMs(dialect.route, outcome.overheadMs);
    } catch (err) {
      this.refuse(x, dialect, err, headers);
    }
  }

  /**
   * POST /v1/feedback (CONTRACT.md section 11): a client with `ai:invoke` scores one of its tenant's
   * requests by its `x-request-id`; a later score replaces it. 404 `request_not_found` for an id its
   * tenant never had (another tenant's reads the same).
   */
  async feedback(x: Exchange, text: string): Promise<void> {
    try {
      const principal = await this.steps.token.verify(x.req.headers);
      const feedback = parseFeedback(text);
      let stored: boolean;
      try {
        stored = await this.feedbackStore.record(principal.tenantId, principal.clientId, feedback);
      } catch {
        throw dependencyDown('Postgres');
      }
      if (!stored) throw new GatewayError(404, 'request_not_found', 'No request of your tenant has this x-request-id.', 'requestId');
      x.send(200, JSON_TYPE, {}, JSON.stringify({ object: 'feedback', requestId: feedback.requestId, score: feedback.score, label: feedback.label }));
    } catch (err) {
      this.refuse(x, chatCompletions, err, {});
    }
  }

  /** GET /v1/models: the configured catalogue, each model under its provider (OpenAI's list shape). */
  async models(x: Exchange): Promise<void> {
    try {
      await this.steps.token.verify(x.req.headers);
    } catch (err) {
      this.refuse(x, chatCompletions, err, {});
      return;
    }
    const data = [...this.options.models.values()].map((m) => ({ id: m.id, object: 'model', created: 0, owned_by: m.provider }));
    x.send(200, JSON_TYPE, { 'x-gateway-overhead-ms': x.elapsedMs().toFixed(2) }, JSON.stringify({ object: 'list', data }));
  }
}
