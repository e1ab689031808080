import type { ClientPrincipal } from '@flagship/oauth';
import { GatewayError } from '../gateway.errors';
import type { TenantContext } from '../tenants/tenant-context.repository';
import { EntitlementStep } from './entitlement.step';
import { ProductKeyStep } from './product-key.step';
import { ProviderPermissionStep } from './provider-permission.step';

const principal = (productKeys: string[] = ['core']): ClientPrincipal => ({
  clientId: 'ffc_1',
  tenantId: 't1',
  scopes: [],
  productKeys,
  jti: 'j',
  issuedAt: 0,
  expiresAt: new Date(Date.now() + 60_000),
});
const tenant = (changes: Partial<TenantContext> = {}): TenantContext => ({
  id: 't1',
  plan: 'free',
  subscriptionStatus: 'active',
  zeroRated: false,
  hostedProviderAllowed: false,
  entitlements: [],
  paused: false,
  ...changes,
});
const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
    return undefined;
  } catch (err) {
    return err instanceof GatewayError ? `${err.status} ${err.code}` : String(err);
  }
};

describe('ProductKeyStep', () => {
  const step = new ProductKeyStep({ own: 'core', internal: ['insights', 'helpdesk', 'forms', 'studio'], legacy: ['partner_portal'] });
  it.each([
    [undefined, '400 missing_product_key'],
    ['', '400 missing_product_key'],
    ['partner_portal', '400 legacy_product_key'],
    ['Core', '400 unknown_product_key'],
    ['core, insights', '400 unknown_product_key'],
    ['core', undefined],
    ['studio', undefined],
  ])('%s -> %s', (header, expected) => {
    expect(codeOf(() => step.resolve(header === undefined ? {} : { 'x-service-product-key': header }))).toBe(expected);
  });
  it('tells internal products apart', () => {
    expect(step.resolve({ 'x-service-product-key': 'forms' })).toEqual({ key: 'forms', internal: true });
    expect(step.resolve({ 'x-service-product-key': 'core' })).toEqual({ key: 'core', internal: false });
  });
});

describe('EntitlementStep', () => {
  const step = new EntitlementStep('core');
  const core = { key: 'core', internal: false };
  const insights = { key: 'insights', internal: true };
  const now = Date.now();

  it('internal products: allow-listed clients only, zero-rated', () => {
    expect(codeOf(() => step.check(principal(['core']), insights, tenant()))).toBe('403 product_not_allowed');
    expect(step.check(principal(['insights']), insights, tenant())).toEqual({ zeroRatedReason: 'internal_product' });
  });

  it("the own product too: a client whose allow-list is set but leaves it out is refused; an empty list leaves it open", () => {
    const premium = tenant({ plan: 'premium' });
    expect(codeOf(() => step.check(principal(['insights']), core, premium))).toBe('403 product_not_allowed');
    expect(step.check(principal([]), core, premium)).toEqual({ zeroRatedReason: null });
    expect(step.check(principal(['insights', 'core']), core, premium)).toEqual({ zeroRatedReason: null });
  });

  it('external: an unexpired enterprise or enterprise_plus_suite entitlement for that product, or premium for core', () => {
    expect(codeOf(() => step.check(principal(), core, tenant()))).toBe('403 entitlement_required');
    const ent = (productKey: string, tier: string, validUntil: Date | null = null) => tenant({ entitlements: [{ productKey, tier, validUntil }] });
    expect(codeOf(() => step.check(principal(), core, ent('insights', 'enterprise')))).toBe('403 entitlement_required');
    expect(codeOf(() => step.check(principal(), core, ent('core', 'enterprise', new Date(now - 1))))).toBe('403 entitlement_required');
    expect(step.check(principal(), core, ent('core', 'enterprise', new Date(now + 60_000)))).toEqual({ zeroRatedReason: null });
    expect(step.check(principal(), core, ent('core', 'enterprise_plus_suite'))).toEqual({ zeroRatedReason: null });
    expect(step.check(principal(), core, tenant({ plan: 'premium' }))).toEqual({ zeroRatedReason: null });
    expect(codeOf(() => step.check(principal(), core, tenant({ plan: 'premium', subscriptionStatus: 'canceled' })))).toBe('403 entitlement_required');
    expect(codeOf(() => step.check(principal(), core, tenant({ plan: 'standard' })))).toBe('403 entitlement_required');
  });

  it('a zero-rated tenant still needs the entitlement, and is then zero-rated', () => {
    expect(codeOf(() => step.check(principal(), core, tenant({ zeroRated: true })))).toBe('403 entitlement_required');
    expect(step.check(principal(), core, tenant({ zeroRated: true, plan: 'premium' }))).toEqual({ zeroRatedReason: 'tenant_zero_rated' });
  });
});

describe('ProviderPermissionStep', () => {
  const step = (hostedEmergency = false, hostedProducts: string[] = []) => new ProviderPermissionStep({ defaultProvider: 'inhouse', hostedProducts, hostedEmergency });
  const asking = (provider?: string) => (provider === undefined ? {} : { 'x-service-provider': provider });

  it('inhouse by default; hosted only as fallback where permitted', () => {
    expect(step().resolve(asking(), 'core', tenant())).toEqual(['inhouse']);
    expect(step().resolve(asking('inhouse'), 'core', tenant({ hostedProviderAllowed: true }))).toEqual(['inhouse', 'hosted']);
    expect(step(true).resolve(asking(), 'core', tenant())).toEqual(['inhouse', 'hosted']);
    expect(step(false, ['studio']).resolve(asking(), 'studio', tenant())).toEqual(['inhouse', 'hosted']);
  });

  it('hosted asked for: tenant allow-list, product list or emergency, else 403', () => {
    expect(codeOf(() => step().resolve(asking('hosted'), 'core', tenant()))).toBe('403 provider_restricted');
    expect(step().resolve(asking('hosted'), 'core', tenant({ hostedProviderAllowed: true }))).toEqual(['hosted']);
    expect(step(false, ['core']).resolve(asking('hosted'), 'core', tenant())).toEqual(['hosted']);
    expect(step(true).resolve(asking('hosted'), 'core', tenant())).toEqual(['hosted']);
  });

  it('refuses unknown provider keys', () => {
    for (const p of ['openai', '', 'Hosted', 'inhouse, hosted']) expect(codeOf(() => step().resolve(asking(p), 'core', tenant()))).toBe('400 unsupported_provider');
  });
});
