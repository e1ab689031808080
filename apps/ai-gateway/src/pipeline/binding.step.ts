import type { IncomingHttpHeaders } from 'node:http';
import { Logger } from '@nestjs/common';
import { END_USER_HEADER, type ModelRoute, parseModelRoute, type RouteReason } from '@flagship/domain';
import type { CompiledFlag, EvaluationResult } from '@flagship/flag-evaluation';
import type { EvaluationRecorder, FlagSetView, FlagStore } from '@flagship/flag-store';
import type { RouteAttribution } from '@flagship/ledger';
import { CHANNELS, type PubSub, SubscribedCache } from '@flagship/redis';
import type { GatewayBinding, GatewayBindingsRepository } from '../bindings/gateway-bindings.repository';
import { dependencyDown } from '../gateway.errors';
import type { ModelEntry } from '../models/model-catalogue';
import type { GatewayRequest } from '../openai/openai-request';
import type { ProviderKey } from '../providers/provider.types';
import type { TenantContext } from '../tenants/tenant-context.repository';
import type { ProviderPermissionStep } from './provider-permission.step';

/** Where a bound request goes, decided before its reservation (the estimate is the served model's). */
export interface RoutePlan {
  model: ModelEntry;
  providers: ProviderKey[];
  /** Output tokens reserved: the request's, lowered by the variation's cap. */
  outputTokens: number;
  overrides: Readonly<Record<string, unknown>>;
  maxOutputTokens: number | undefined;
  attribution: RouteAttribution;
  /** The served variation's monthly spend cap (micro-credits), when it has one. */
  cap?: number;
  /** Where the request goes when the cap leaves no room: the control (the flag's off variation). */
  control?: RoutePlan;
}

/** Who is asking, as the binding's context is made of it. */
export interface RouteCaller {
  clientId: string;
  productKey: string;
  tenant: TenantContext;
}

type Parsed = { route: ModelRoute } | { problem: string };

/** An end user's key as the context takes it: at most this long, else the client's id stands in. */
const MAX_END_USER = 256;
const CONTEXT_KIND = 'multi';
const NO_OVERRIDES: Readonly<Record<string, unknown>> = Object.freeze({});

export interface BindingStepOptions {
  models: ReadonlyMap<string, ModelEntry>;
  /** A binding (or its absence) is held this long at most, should an announcement be lost. */
  ttlMs: number;
  /**
   * Notes each evaluation of a bound flag for the stale-flags list: the gateway is a remote
   * evaluator, and a flag only it evaluates would otherwise read as unused. A map insert per request.
   */
  recorder?: Pick<EvaluationRecorder, 'record'>;
}

/**
 * Step 5b (after the provider permission): a product key bound to a JSON flag (CONTRACT.md section
 * 11) has each request routed by the flag's variation for the context `{kind: multi, user, tenant,
 * client, product}`, evaluated by the one evaluator on the one flag store (libs/flag-store, kept
 * current over the change feed); the binding itself is held in a SubscribedCache following
 * `gateway-binding-changed`. Guard rails: a flag missing, not JSON, failing to evaluate, or a
 * variation that is malformed, names a model outside the catalogue or a provider the tenant may not
 * use, serves the route's default (the model the request asked for) and says why on the ledger row;
 * nothing here answers 500. Once warm, deciding costs two map reads, one evaluation and a memoised
 * parse of the variation (memoised per compiled result: results are built once per flag version).
 */
export class BindingStep {
  private readonly logger = new Logger('BindingStep');
  private readonly bindings: SubscribedCache<string, GatewayBinding | null>;
  private readonly parsed = new WeakMap<EvaluationResult, Parsed>();

  constructor(
    repository: Pick<GatewayBindingsRepository, 'find'>,
    private readonly flags: Pick<FlagStore, 'peek' | 'view'>,
    private readonly permission: Pick<ProviderPermissionStep, 'permits'>,
    pubsub: PubSub | undefined,
    private readonly options: BindingStepOptions,
  ) {
    this.bindings = new SubscribedCache<string, GatewayBinding | null>(pubsub, {
      name: 'BindingStep',
      load: (id) => {
        const at = id.indexOf(' ');
        return repository.find(id.slice(0, at), id.slice(at + 1));
      },
      expiresAt: (_binding, loadedAt) => loadedAt + options.ttlMs,
      serveStaleOn: (_err, wanted) => wanted === 'reconcile',
    }).follow(CHANNELS.gatewayBindingChanged, (m, cache) => cache.invalidate(`${m.tenantId.toLowerCase()} ${m.productKey}`));
  }

  start(): this {
    this.bindings.start();
    return this;
  }

  close(): void {
    this.bindings.close();
  }

  /**
   * The route of a request of a bound product key, or undefined when its product key is not bound
   * (or the binding names another model alias): then nothing changes and nothing is recorded.
   * Synchronous once the binding and the flags are held.
   */
  plan(headers: IncomingHttpHeaders, caller: RouteCaller, request: GatewayRequest, providers: ProviderKey[]): RoutePlan | undefined | Promise<RoutePlan | undefined> {
    const id = `${caller.tenant.id} ${caller.productKey}`;
    const binding = this.bindings.peek(id);
    if (binding !== undefined) return this.decide(binding, headers, caller, request, providers);
    return this.bindings.get(id).then(
      (b) => this.decide(b, headers, caller, request, providers),
      (err: unknown) => {
        this.logger.warn({ err }, 'cannot load the gateway binding');
        throw dependencyDown('Postgres');
      },
    );
  }

  private decide(binding: GatewayBinding | null, headers: IncomingHttpHeaders, caller: RouteCaller, request: GatewayRequest, providers: ProviderKey[]): RoutePlan | undefined | Promise<RoutePlan> {
    if (binding === null) return undefined;
    // Embeddings are routed only when the binding names their model: a chat model would not embed.
    if (binding.modelAlias === null ? request.endpoint === 'embeddings' : request.model.id !== binding.modelAlias) return undefined;
    const view = this.flags.peek(caller.tenant.id, binding.environment);
    if (view !== undefined) return this.evaluate(view, binding, headers, caller, request, providers);
    return this.flags.view(caller.tenant.id, binding.environment).then(
      (v) => this.evaluate(v, binding, headers, caller, request, providers),
      (err: unknown) => {
        this.logger.warn({ err, flagKey: binding.flagKey }, 'cannot read the flags of a bound route; the route default is served');
        return defaultPlan(request, providers, attributionOf(binding.flagKey, null, null, 'evaluation_error'));
      },
    );
  }

  private evaluate(view: FlagSetView, binding: GatewayBinding, headers: IncomingHttpHeaders, caller: RouteCaller, request: GatewayRequest, providers: ProviderKey[]): RoutePlan {
    const flag = view.set.get(binding.flagKey);
    if (flag === undefined) return defaultPlan(request, providers, attributionOf(binding.flagKey, null, null, 'flag_not_found'));
    const version = flag.version ?? null;
    if (flag.type !== 'json') return defaultPlan(request, providers, attributionOf(binding.flagKey, version, null, 'flag_not_json'));
    const context = {
      kind: CONTEXT_KIND,
      user: { key: endUserOf(headers, request) ?? caller.clientId },
      tenant: { key: caller.tenant.id },
      client: { key: caller.clientId },
      product: { key: caller.productKey },
    };
    const result = view.set.evaluate(flag, context);
    this.options.recorder?.record(caller.tenant.id, binding.environment, binding.flagKey);
    const served = this.planOf(result, binding.flagKey, version, null, caller, request, providers);
    if ('reason' in served) return defaultPlan(request, providers, attributionOf(binding.flagKey, version, null, served.reason));
    const cap = binding.spendCaps.get(result.variationId!);
    if (cap === undefined) return served;
    served.cap = cap;
    served.control = this.controlOf(flag, result, binding.flagKey, version, caller, request, providers);
    return served;
  }

  /** The flag's off variation when it is a servable route other than the capped one; else the route default. Both say `spend_cap`. */
  private controlOf(flag: CompiledFlag, capped: EvaluationResult, flagKey: string, version: number | null, caller: RouteCaller, request: GatewayRequest, providers: ProviderKey[]): RoutePlan {
    const off = flag.offResult;
    if (off.variationId !== undefined && off.variationId !== capped.variationId) {
      const control = this.planOf(off, flagKey, version, 'spend_cap', caller, request, providers);
      if (!('reason' in control)) return control;
    }
    return defaultPlan(request, providers, attributionOf(flagKey, version, null, 'spend_cap'));
  }

  private planOf(
    result: EvaluationResult,
    flagKey: string,
    version: number | null,
    reason: RouteReason | null,
    caller: RouteCaller,
    request: GatewayRequest,
    providers: ProviderKey[],
  ): RoutePlan | { reason: RouteReason } {
    if (result.errorKind !== undefined || result.variationId === undefined) return { reason: 'evaluation_error' };
    let parsed = this.parsed.get(result);
    if (parsed === undefined) {
      parsed = parseModelRoute(result.value);
      this.parsed.set(result, parsed);
    }
    if ('problem' in parsed) return { reason: 'variation_malformed' };
    const route = parsed.route;
    const model = this.options.models.get(route.model);
    if (model === undefined) return { reason: 'model_not_allowed' };
    const served = route.provider === undefined ? providers : this.permission.permits(route.provider, caller.productKey, caller.tenant);
    if (served === undefined) return { reason: 'provider_restricted' };
    const chat = request.endpoint !== 'embeddings';
    return {
      model,
      providers: served,
      outputTokens: chat && route.maxOutputTokens !== undefined ? cappedOutput(request, route.maxOutputTokens) : request.outputTokens,
      overrides: chat ? route.overrides : NO_OVERRIDES,
      maxOutputTokens: chat ? route.maxOutputTokens : undefined,
      attribution: attributionOf(flagKey, version, result.variationId, reason),
    };
  }
}

/** The request as the plan says: model (and its prices), sampling overrides, output caps. After its reservation. */
export function applyPlan(request: GatewayRequest, plan: RoutePlan): void {
  const body = request.body;
  if (plan.model !== request.model) {
    body['model'] = plan.model.id;
    request.model = plan.model;
  }
  for (const name in plan.overrides) body[name] = plan.overrides[name];
  const cap = plan.maxOutputTokens;
  if (cap !== undefined) {
    for (const field of ['max_tokens', 'max_completion_tokens']) {
      const v = body[field];
      if (typeof v === 'number' && v > cap) body[field] = cap;
    }
  }
  request.outputTokens = plan.outputTokens;
}

/** The output the request reserves once each choice is capped at `cap` (n was checked by requestOf). */
function cappedOutput(request: GatewayRequest, cap: number): number {
  const n = typeof request.body['n'] === 'number' ? request.body['n'] : 1;
  return Math.min(request.outputTokens / n, cap) * n;
}

function defaultPlan(request: GatewayRequest, providers: ProviderKey[], attribution: RouteAttribution): RoutePlan {
  return { model: request.model, providers, outputTokens: request.outputTokens, overrides: NO_OVERRIDES, maxOutputTokens: undefined, attribution };
}

function attributionOf(flagKey: string, flagVersion: number | null, variation: string | null, reason: RouteReason | null): RouteAttribution {
  return { flagKey, flagVersion, variation, contextKind: CONTEXT_KIND, reason };
}

/**
 * The caller's end user: `x-service-end-user`, else the body's `user` (OpenAI's; Anthropic's
 * `metadata.user_id` and the Responses API's `safety_identifier` / `user` arrive there through their
 * translation). Undefined when none (or one too long to be a key): the client's id stands in.
 */
export function endUserOf(headers: IncomingHttpHeaders, request: GatewayRequest): string | undefined {
  const header = headers[END_USER_HEADER];
  if (typeof header === 'string') {
    const key = header.trim();
    if (key !== '' && key.length <= MAX_END_USER) return key;
  }
  const user = request.body['user'];
  return typeof user === 'string' && user !== '' && user.length <= MAX_END_USER ? user : undefined;
}
