import type { IncomingHttpHeaders } from 'node:http';
import { GatewayError } from '../gateway.errors';

export interface ProductKeys {
  own: string;
  internal: readonly string[];
  legacy: readonly string[];
}

export interface ResolvedProduct {
  key: string;
  /** An internal suite product: zero-rated, and only for clients whose allow-list names it. */
  internal: boolean;
}

/** Step 2: `x-service-product-key`, one canonical product key (CONTRACT.md section 7); the legacy key is refused. */
export class ProductKeyStep {
  private readonly internal: ReadonlySet<string>;
  private readonly legacy: ReadonlySet<string>;

  constructor(private readonly keys: ProductKeys) {
    this.internal = new Set(keys.internal);
    this.legacy = new Set(keys.legacy);
  }

  resolve(headers: IncomingHttpHeaders): ResolvedProduct {
    const raw = headers['x-service-product-key'];
    // Node joins repeated headers with ', ': two keys are not one canonical key.
    const key = typeof raw === 'string' ? raw.trim() : '';
    if (key === '') {
      throw new GatewayError(400, 'missing_product_key', 'Send the header x-service-product-key with your canonical product key.', 'x-service-product-key');
    }
    if (this.legacy.has(key)) {
      throw new GatewayError(400, 'legacy_product_key', `The product key ${key} is legacy and no longer accepted; use your canonical product key.`, 'x-service-product-key');
    }
    if (key === this.keys.own) return { key, internal: false };
    if (this.internal.has(key)) return { key, internal: true };
    throw new GatewayError(400, 'unknown_product_key', 'The x-service-product-key header names no known product.', 'x-service-product-key');
  }
}
