import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { DATA_SOURCE } from '@flagship/persistence';

/** A gateway route's binding to a flag, as the gateway reads it (gateway_bindings). */
export interface GatewayBinding {
  flagKey: string;
  /** Only requests asking for this model are routed by the flag; null: every request of the product key (embeddings only by name). */
  modelAlias: string | null;
  /** The environment whose flag is evaluated. */
  environment: string;
  /** Variation id -> its monthly spend cap (micro-credits); empty: none capped. */
  spendCaps: ReadonlyMap<string, number>;
  version: number;
}

interface Row {
  flag_key: string;
  model_alias: string | null;
  environment_key: string;
  spend_caps: Record<string, unknown> | null;
  version: number;
}

/** The bindings the gateway routes by, read-only; every query names the tenant. */
@Injectable()
export class GatewayBindingsRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {}

  async find(tenantId: string, productKey: string): Promise<GatewayBinding | null> {
    const rows: Row[] = await this.ds.query(
      'SELECT flag_key, model_alias, environment_key, spend_caps, version FROM gateway_bindings WHERE tenant_id = $1 AND product_key = $2',
      [tenantId, productKey],
    );
    const r = rows[0];
    if (r === undefined) return null;
    return { flagKey: r.flag_key, modelAlias: r.model_alias, environment: r.environment_key, spendCaps: capsOf(r.spend_caps), version: r.version };
  }
}

/** The caps management-api wrote (`{variationId: micro-credits}`); anything else in the column is ignored, never half-read. */
export function capsOf(json: Record<string, unknown> | null): ReadonlyMap<string, number> {
  const caps = new Map<string, number>();
  if (json === null || typeof json !== 'object') return caps;
  for (const [variation, cap] of Object.entries(json)) if (typeof cap === 'number' && Number.isSafeInteger(cap) && cap >= 0) caps.set(variation, cap);
  return caps;
}
