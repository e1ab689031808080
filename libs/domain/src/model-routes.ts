import { PROVIDER_KEYS, type ProviderKey } from './product-keys';

/**
 * A model route: what one variation of a JSON flag bound to a gateway route (CONTRACT.md section 11)
 * holds, `{model, provider?, params?}`, checked once by management-api when a route is bound and
 * again by the gateway for every flag version it evaluates (a flag may be edited after its binding).
 */
export interface ModelRoute {
  model: string;
  /** Absent: the provider the request would get anyway (its header, else the gateway's default). */
  provider?: ProviderKey;
  /** Fields set on the upstream body, replacing the caller's (sampling settings only: see ROUTE_OVERRIDES). */
  overrides: Readonly<Record<string, unknown>>;
  /** `params.max_tokens` / `params.max_completion_tokens`: output tokens per choice at most (a cap, never a raise). */
  maxOutputTokens?: number;
}

/**
 * The params a variation may set, with their check: sampling settings that change neither what the
 * gateway estimates nor what it validates (messages, tools, `n`, streaming stay the caller's), so a
 * variation cannot make a request cost more than its reservation.
 */
const ROUTE_OVERRIDES: Readonly<Record<string, (v: unknown) => boolean>> = {
  temperature: (v) => isNumberIn(v, 0, 2),
  top_p: (v) => isNumberIn(v, 0, 1),
  frequency_penalty: (v) => isNumberIn(v, -2, 2),
  presence_penalty: (v) => isNumberIn(v, -2, 2),
  seed: (v) => typeof v === 'number' && Number.isSafeInteger(v),
  stop: (v) => (typeof v === 'string' && v.length <= 256) || (Array.isArray(v) && v.length <= 4 && v.every((s) => typeof s === 'string' && s.length <= 256)),
  reasoning_effort: (v) => v === 'minimal' || v === 'low' || v === 'medium' || v === 'high',
};
/** Caps: the smaller of the caller's limit and this is asked for and reserved. */
const ROUTE_CAPS: readonly string[] = ['max_tokens', 'max_completion_tokens'];
/** What a variation's params may name. */
export const ROUTE_PARAMS: readonly string[] = [...Object.keys(ROUTE_OVERRIDES), ...ROUTE_CAPS];
/** A model id's longest form (the ledger's model column holds what the catalogue lists). */
const MAX_MODEL_LENGTH = 200;

const isNumberIn = (v: unknown, lo: number, hi: number): boolean => typeof v === 'number' && Number.isFinite(v) && v >= lo && v <= hi;
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The route a variation's value names, or what is wrong with it (a sentence naming the field). */
export function parseModelRoute(value: unknown): { route: ModelRoute } | { problem: string } {
  if (!isRecord(value)) return { problem: 'must be a JSON object {model, provider?, params?}' };
  const { model, provider, params, ...rest } = value;
  const extra = Object.keys(rest);
  if (extra.length > 0) return { problem: `has ${extra[0]!.slice(0, 50)}, which a model route does not (model, provider, params)` };
  if (typeof model !== 'string' || model === '' || model.length > MAX_MODEL_LENGTH) return { problem: `model must be a model id (1 to ${MAX_MODEL_LENGTH} characters)` };
  if (provider !== undefined && provider !== null && !(PROVIDER_KEYS as readonly unknown[]).includes(provider)) return { problem: `provider must be one of ${PROVIDER_KEYS.join(', ')}` };
  const route: ModelRoute = { model, overrides: {}, ...(typeof provider === 'string' ? { provider: provider as ProviderKey } : {}) };
  if (params === undefined || params === null) return { route };
  if (!isRecord(params)) return { problem: 'params must be an object' };
  const overrides: Record<string, unknown> = {};
  for (const [name, v] of Object.entries(params)) {
    if (ROUTE_CAPS.includes(name)) {
      if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1) return { problem: `params.${name} must be a positive integer` };
      route.maxOutputTokens = Math.min(route.maxOutputTokens ?? v, v);
      continue;
    }
    const check = ROUTE_OVERRIDES[name];
    if (check === undefined) return { problem: `params.${name.slice(0, 50)} is not a setting a variation may change (${ROUTE_PARAMS.join(', ')})` };
    if (!check(v)) return { problem: `params.${name} is out of range` };
    overrides[name] = v;
  }
  route.overrides = overrides;
  return { route };
}

/**
 * Why a bound request did not get the route its flag evaluated to (usage_ledger.route_reason); the
 * request then goes to the model it asked for, or, past a variation's spend cap, to the control.
 */
export const ROUTE_REASONS = ['flag_not_found', 'flag_not_json', 'evaluation_error', 'variation_malformed', 'model_not_allowed', 'provider_restricted', 'spend_cap'] as const;
export type RouteReason = (typeof ROUTE_REASONS)[number];

/** The header a caller names its end user in when its body cannot (the evaluation context's `user` key). */
export const END_USER_HEADER = 'x-service-end-user';
