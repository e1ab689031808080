/**
 * Canonical product keys (CONTRACT.md section 7). These are defaults: the running services take
 * the lists from configuration, so a new suite product needs no code change.
 */
export const OWN_PRODUCT_KEY = 'core';
export const INTERNAL_PRODUCT_KEYS = ['insights', 'helpdesk', 'forms', 'studio'] as const;
export const LEGACY_PRODUCT_KEYS = ['partner_portal'] as const;
export const PRODUCT_KEYS = [OWN_PRODUCT_KEY, ...INTERNAL_PRODUCT_KEYS] as const;
export type ProductKey = string;

export const PROVIDER_KEYS = ['inhouse', 'hosted'] as const;
export type ProviderKey = (typeof PROVIDER_KEYS)[number];

export const ENTITLEMENT_TIERS = ['enterprise', 'enterprise_plus_suite'] as const;
export type EntitlementTier = (typeof ENTITLEMENT_TIERS)[number];
