import type { BillingCycle, Plan, SubscriptionStatus } from './plans';
import type { TenantRole } from './roles';

/** ISO 8601 UTC timestamp string. */
export type Timestamp = string;

export const FLAG_TYPES = ['boolean', 'string', 'number', 'json'] as const;
export type FlagType = (typeof FLAG_TYPES)[number];
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** Flag keys (CONTRACT.md section 4). */
export const FLAG_KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export interface FlagVariation {
  id: string;
  name: string;
  value: JsonValue;
  description: string;
  weight: number;
}

export interface Flag {
  id: string;
  key: string;
  name: string;
  type: FlagType;
  enabled: boolean;
  defaultValue: JsonValue;
  description: string;
  tags: string[];
  projectId: string | null;
  createdAt: Timestamp;
  updatedAt: Timestamp;
}

export interface Project {
  id: string;
  name: string;
  description: string;
  color: string;
  flagCount: number;
  createdAt: Timestamp;
  updatedAt: Timestamp;
}

export interface Tenant {
  id: string;
  name: string;
  primaryEmail: string;
  contactName: string;
  isSandbox: boolean;
  subscription: { plan: Plan; status: SubscriptionStatus };
  createdAt: Timestamp;
}

export interface TenantUser {
  userId: string;
  email: string;
  displayName: string;
  role: TenantRole;
  /** `invited`: added by e-mail and not signed in yet (removing them withdraws the invitation). */
  status: 'active' | 'invited';
  lastAccessedAt: Timestamp | null;
  createdAt: Timestamp;
}

export interface Subscription {
  id: string;
  plan: Plan;
  status: SubscriptionStatus;
  currentPeriodStart: Timestamp;
  currentPeriodEnd: Timestamp;
  cancelAtPeriodEnd: boolean;
}

export interface OAuthClient {
  clientId: string;
  clientSecret?: string;
  name: string;
  scopes: string[];
  productKeys: string[];
  createdAt: Timestamp;
}

export interface ProductTourStatus {
  completed: boolean;
  completed_at: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface SignInBootstrapResponse {
  success: boolean;
  message: string;
  data: {
    user: { uid: string; email: string; tenant_id: string; role: TenantRole };
    subscription: { plan: Plan; status: SubscriptionStatus; billingCycle: BillingCycle };
    tenants: Array<{ tenant_id: string; tenant_name: string; role: TenantRole }>;
    active_tenant_id: string;
    active_tenant_role: TenantRole;
    canonical_tenant_id: string;
    canonical_role: TenantRole;
  };
}

/** An OAuth client as `/api/oauth/clients` answers (CONTRACT.md section 3); never its secret's hash. */
export interface OAuthClient {
  clientId: string;
  name: string;
  scopes: string[];
  productKeys: string[];
  createdAt: Timestamp;
  createdBy: string | null;
  secretRotatedAt: Timestamp | null;
}

/** What create and rotate answer: the secret, shown this once. */
export interface OAuthClientWithSecret extends OAuthClient {
  clientSecret: string;
}
