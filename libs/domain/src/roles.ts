/** Roles inside one tenant (CONTRACT.md section 2), strongest first. */
export const TENANT_ROLES = ['admin', 'editor', 'viewer'] as const;
export type TenantRole = (typeof TENANT_ROLES)[number];

const RANK: Readonly<Record<TenantRole, number>> = { admin: 3, editor: 2, viewer: 1 };

/** True when `held` is at least as strong as `needed`. */
export function roleAtLeast(held: TenantRole, needed: TenantRole): boolean {
  return RANK[held] >= RANK[needed];
}

export function isTenantRole(value: unknown): value is TenantRole {
  return typeof value === 'string' && (TENANT_ROLES as readonly string[]).includes(value);
}
