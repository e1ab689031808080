import type { HttpTransport } from '../http-transport';
import { FlagshipError } from '../sdk.errors';
import type { RequestOptions } from '../sdk.types';

/** A guarded rollout's stages and guards (CONTRACT.md section 11); the platform advances it. */
export interface RolloutPlan {
  stages: Array<{ percent: number; minRequests?: number; minMinutes?: number }>;
  guards: { errorRate?: number; p95LatencyMs?: number; costPerRequest?: number };
}

/** A gateway route (product key) bound to a JSON flag whose variations are `{model, provider?, params?}`. */
export interface GatewayBinding {
  productKey: string;
  flagKey: string;
  /** Only requests asking for this model are routed by the flag; null: every chat, Messages and Responses request. */
  modelAlias: string | null;
  /** The environment whose flag the gateway evaluates. */
  environment: string;
  rolloutPlan: RolloutPlan | null;
  /** Variation id -> monthly cap in micro-credits; past it the variation's requests go to the control (the flag's off variation). */
  spendCaps: Record<string, number> | null;
  version: number;
  createdAt: string;
  updatedAt: string;
}

/** A binding and its ETag (what `put` and `delete` take as `ifMatch`). */
export interface VersionedGatewayBinding {
  binding: GatewayBinding;
  etag: string;
}

/** The whole binding: a PUT replaces every field (those left out become null). */
export interface PutGatewayBindingInput {
  flagKey: string;
  modelAlias?: string | null;
  rolloutPlan?: RolloutPlan | null;
  spendCaps?: Record<string, number> | null;
}

export interface GatewayBindingAuditEntry {
  action: string;
  actor: string;
  changes: Record<string, unknown>;
  createdAt: string;
}

export interface GatewayBindingWriteOptions extends RequestOptions {
  /** The ETag read; the write is refused (ApiError 412) if the binding changed since, or (put) was never made. */
  ifMatch?: string;
}

const path = (productKey: string): string => `/api/gateway/bindings/${encodeURIComponent(productKey)}`;

/** `/api/gateway/bindings`: roll models out by flag. Reads: viewers (`flags:read`); writes: tenant admins. */
export class GatewayBindingsResource {
  constructor(private readonly http: HttpTransport) {}

  /** Every binding of the tenant, by product key. */
  async list(options?: RequestOptions): Promise<GatewayBinding[]> {
    return (await this.http.request<GatewayBinding[]>({ method: 'GET', path: '/api/gateway/bindings', options })).body;
  }

  async get(productKey: string, options?: RequestOptions): Promise<VersionedGatewayBinding> {
    return versioned(await this.http.request<GatewayBinding>({ method: 'GET', path: path(productKey), options }));
  }

  /**
   * Binds the product key to the flag (of `options.environment`, default production), or replaces its
   * binding. 422 names a flag that is missing or not JSON, a variation that is not a model route, a
   * hosted variation the tenant may not use, or a cap naming no variation; 409 `quota-exceeded`.
   */
  async put(productKey: string, input: PutGatewayBindingInput, options: GatewayBindingWriteOptions = {}): Promise<VersionedGatewayBinding> {
    const { ifMatch, ...rest } = options;
    return versioned(await this.http.request<GatewayBinding>({ method: 'PUT', path: path(productKey), body: input, ifMatch, options: rest }));
  }

  /** Unbinds: the product key's requests go to the model they ask for. */
  async delete(productKey: string, options: GatewayBindingWriteOptions = {}): Promise<void> {
    const { ifMatch, ...rest } = options;
    await this.http.request<void>({ method: 'DELETE', path: path(productKey), ifMatch, options: rest });
  }

  async audit(productKey: string, options?: RequestOptions): Promise<GatewayBindingAuditEntry[]> {
    return (await this.http.request<GatewayBindingAuditEntry[]>({ method: 'GET', path: `${path(productKey)}/audit`, options })).body;
  }
}

function versioned(res: { body: GatewayBinding; headers: Headers }): VersionedGatewayBinding {
  const etag = res.headers.get('etag');
  if (etag === null) throw new FlagshipError('The API answered a gateway binding without an ETag.');
  return { binding: res.body, etag };
}
