import type { IncomingHttpHeaders } from 'node:http';
import { GatewayError } from '../gateway.errors';
import type { ProviderKey } from '../providers/provider.types';
import type { TenantContext } from '../tenants/tenant-context.repository';

export interface ProviderPolicy {
  defaultProvider: ProviderKey;
  /** PROVIDER_HOSTED_PRODUCTS: approved experiments. */
  hostedProducts: readonly string[];
  /** PROVIDER_HOSTED_EMERGENCY. */
  hostedEmergency: boolean;
}

/**
 * Step 5: which providers may serve the request, in order. `x-service-provider` overrides the
 * configured default; `hosted` only for tenants with `hostedProviderAllowed`, products in
 * PROVIDER_HOSTED_PRODUCTS or while PROVIDER_HOSTED_EMERGENCY is on; when `inhouse` is asked for and
 * `hosted` is permitted, `hosted` follows it as the fallback the provider layer may use.
 */
export class ProviderPermissionStep {
  private readonly hostedProducts: ReadonlySet<string>;

  constructor(private readonly policy: ProviderPolicy) {
    this.hostedProducts = new Set(policy.hostedProducts);
  }

  resolve(headers: IncomingHttpHeaders, productKey: string, tenant: TenantContext): ProviderKey[] {
    const raw = headers['x-service-provider'];
    const asked = raw === undefined ? this.policy.defaultProvider : typeof raw === 'string' ? raw.trim() : '';
    if (asked !== 'inhouse' && asked !== 'hosted') {
      throw new GatewayError(400, 'unsupported_provider', 'x-service-provider must be inhouse or hosted.', 'x-service-provider');
    }
    const hostedPermitted = this.hostedPermitted(productKey, tenant);
    if (asked === 'hosted') {
      if (!hostedPermitted) {
        throw new GatewayError(403, 'provider_restricted', 'The hosted provider is restricted to approved tenants and products.', 'x-service-provider');
      }
      return ['hosted'];
    }
    return hostedPermitted ? ['inhouse', 'hosted'] : ['inhouse'];
  }

  /**
   * The providers for a provider a bound flag's variation names (the same rules as the header's), or
   * undefined when the tenant may not use it: the variation is then not served (BindingStep).
   */
  permits(provider: ProviderKey, productKey: string, tenant: TenantContext): ProviderKey[] | undefined {
    const hosted = this.hostedPermitted(productKey, tenant);
    if (provider === 'hosted') return hosted ? ['hosted'] : undefined;
    return hosted ? ['inhouse', 'hosted'] : ['inhouse'];
  }

  private hostedPermitted(productKey: string, tenant: TenantContext): boolean {
    return this.policy.hostedEmergency || tenant.hostedProviderAllowed || this.hostedProducts.has(productKey);
  }
}
