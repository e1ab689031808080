// Server state of the tenant pages (projects, team, OAuth clients, sandbox, tours, usage, billing):
// each a query on management-api's public REST API, keyed by tenant so a switch never shows another's.
import { useQuery } from '@tanstack/react-query';
import type { Budget, CreditBalance, Invitation, LowBalanceAlert, LowBalanceCrossing, Project, Subscription, Tenant, TenantRole, TenantUser, UsageDaily, UsageFilter, UsageRow, UsageSummary, Webhook, WebhookDelivery, WebhookEventType, WebhookWithSecret } from '@flagship/sdk';
import { request, requestAll, type RequestScope } from './api';
import type { OAuthClient, OAuthClientWithSecret } from '@flagship/domain';

export type { OAuthClient, OAuthClientWithSecret };
export type { Budget, CreditBalance, Invitation, LowBalanceAlert, LowBalanceCrossing, Project, Subscription, Tenant, TenantRole, TenantUser, UsageDaily, UsageFilter, UsageRow, UsageSummary };
export type { Webhook, WebhookDelivery, WebhookEventType, WebhookWithSecret };


export interface TourStatus { completed: boolean; completed_at: string | null }
export interface SandboxStatus { active: boolean; expiresAt: string }
export interface SandboxIndicators { flagsUsed: number; evaluations: number }
export interface SandboxDemoData { flags: string[]; users: string[] }

/** CONTRACT.md section 3; `ai:invoke` is what the AI gateway requires. */
export const SCOPES = ['flags:read', 'flags:write', 'flags:evaluate', 'projects:read', 'projects:write', 'ai:invoke'] as const;
/** CONTRACT.md section 7: the own product, then the internal suite (only platform admins may allow those). */
export const PRODUCT_KEYS = ['core', 'insights', 'helpdesk', 'forms', 'studio'] as const;
export const ROLES: readonly TenantRole[] = ['admin', 'editor', 'viewer'];
export const TOUR_KEY = 'console-intro';

/** Micro-credits as credits, for people: 1 credit = 1,000,000 micro-credits. */
export const credits = (micro: number): string => (micro / 1_000_000).toLocaleString(undefined, { maximumFractionDigits: 6 });

const tenantOnly = (scope: RequestScope): RequestScope => ({ ...scope, environment: undefined });

export function useProjects(scope: RequestScope) {
  return useQuery({
    queryKey: ['projects', scope.tenantId],
    queryFn: () => requestAll<Project>('/api/projects?limit=1000', tenantOnly(scope)),
  });
}

export function useTenants(scope: RequestScope) {
  return useQuery({
    queryKey: ['tenants', scope.token],
    queryFn: async () => (await request<Tenant[]>('GET', '/api/tenants', { token: scope.token })).body,
    staleTime: 60_000,
  });
}

export function useMembers(scope: RequestScope) {
  return useQuery({
    queryKey: ['members', scope.tenantId],
    queryFn: () => requestAll<TenantUser>(`/api/tenants/${encodeURIComponent(scope.tenantId ?? '')}/users?limit=1000`, tenantOnly(scope)),
  });
}

/** The signed-in user's own pending invitations (by their verified e-mail; any tenant). */
export function useMyInvitations(scope: RequestScope) {
  return useQuery({
    queryKey: ['my-invitations', scope.token],
    queryFn: async () => (await request<Invitation[]>('GET', '/api/invitations', { token: scope.token })).body,
    staleTime: 60_000,
    retry: false,
  });
}

/** The active tenant's pending invitations (admins). */
export function useTenantInvitations(scope: RequestScope, enabled: boolean) {
  return useQuery({
    queryKey: ['tenant-invitations', scope.tenantId],
    queryFn: async () => (await request<Invitation[]>('GET', `/api/tenants/${encodeURIComponent(scope.tenantId ?? '')}/invitations`, tenantOnly(scope))).body,
    enabled,
  });
}

export function useOAuthClients(scope: RequestScope) {
  return useQuery({
    queryKey: ['oauth-clients', scope.tenantId],
    queryFn: () => requestAll<OAuthClient>('/api/oauth/clients?limit=1000', tenantOnly(scope)),
  });
}

/** The tenant's webhooks (at most QUOTA_WEBHOOKS_PER_TENANT); admins only, so callers enable it by role. */
export function useWebhooks(scope: RequestScope, enabled: boolean) {
  return useQuery({
    enabled,
    queryKey: ['webhooks', scope.tenantId],
    queryFn: () => requestAll<Webhook>('/api/webhooks?limit=1000', tenantOnly(scope)),
  });
}

/** How many of a webhook's newest deliveries the log shows (the API keeps 30 days of them). */
export const DELIVERIES_SHOWN = 50;

/** A webhook's newest deliveries; polled while one is pending, so an attempt billing-worker makes shows up. */
export function useWebhookDeliveries(scope: RequestScope, webhookId: string) {
  return useQuery({
    queryKey: ['webhooks', scope.tenantId, webhookId, 'deliveries'],
    queryFn: async () => (await request<WebhookDelivery[]>('GET', `/api/webhooks/${encodeURIComponent(webhookId)}/deliveries?limit=${DELIVERIES_SHOWN}`, tenantOnly(scope))).body,
    refetchInterval: (q) => (q.state.data?.some((d) => d.status === 'pending') ? 5000 : false),
  });
}

export function useTour(scope: RequestScope, enabled = true) {
  return useQuery({
    queryKey: ['tour', scope.tenantId, TOUR_KEY],
    queryFn: async () => (await request<TourStatus>('GET', `/v1/users/me/product-tours/${TOUR_KEY}`, tenantOnly(scope))).body,
    enabled,
    staleTime: Infinity,
  });
}

/** The active tenant's sandbox state: null when the tenant is no sandbox. */
export function useSandbox(scope: RequestScope) {
  const tenants = useTenants(scope);
  const tenant = tenants.data?.find((t) => t.id === scope.tenantId);
  const isSandbox = tenant?.isSandbox === true;
  const status = useQuery({
    queryKey: ['sandbox', scope.tenantId],
    queryFn: async () => (await request<SandboxStatus>('GET', '/api/sandbox/status', tenantOnly(scope))).body,
    enabled: isSandbox,
    staleTime: 60_000,
  });
  return { isSandbox, status };
}

export function useSandboxDetails(scope: RequestScope, enabled: boolean) {
  const indicators = useQuery({
    queryKey: ['sandbox-indicators', scope.tenantId],
    queryFn: async () => (await request<SandboxIndicators>('GET', '/api/sandbox/indicators', tenantOnly(scope))).body,
    enabled,
  });
  const demo = useQuery({
    queryKey: ['sandbox-demo', scope.tenantId],
    queryFn: async () => (await request<SandboxDemoData>('GET', '/api/sandbox/demo-data', tenantOnly(scope))).body,
    enabled,
  });
  return { indicators, demo };
}

/** `from`/`to`/`productKey`/`status`/`model` as the usage endpoints take them, empty ones left out. */
export function usageQuery(f: UsageFilter): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(f)) if (typeof v === 'string' && v !== '') q.set(k, v);
  return q.toString();
}

export function useUsage(scope: RequestScope, f: UsageFilter) {
  const qs = usageQuery(f);
  const rows = useQuery({
    queryKey: ['usage', scope.tenantId, qs],
    queryFn: async () => (await request<UsageRow[]>('GET', `/api/usage?limit=1000${qs ? `&${qs}` : ''}`, tenantOnly(scope))).body,
  });
  const summary = useQuery({
    queryKey: ['usage-summary', scope.tenantId, qs],
    queryFn: async () => (await request<UsageSummary>('GET', `/api/usage/summary${qs ? `?${qs}` : ''}`, tenantOnly(scope))).body,
  });
  // The chart's per-day counts, from the same rollups as the summary: every matching row, not the page of rows.
  const daily = useQuery({
    queryKey: ['usage-daily', scope.tenantId, qs],
    queryFn: async () => (await request<UsageDaily>('GET', `/api/usage/daily${qs ? `?${qs}` : ''}`, tenantOnly(scope))).body,
  });
  return { rows, summary, daily };
}

export function useCredits(scope: RequestScope) {
  return useQuery({
    queryKey: ['credits', scope.tenantId],
    queryFn: async () => (await request<CreditBalance>('GET', '/api/billing/credits', tenantOnly(scope))).body,
  });
}

/** The tenant's low-balance threshold (tenant admins; a 403 otherwise). */
export function useLowBalanceAlert(scope: RequestScope) {
  return useQuery({
    queryKey: ['low-balance-alert', scope.tenantId],
    queryFn: async () => (await request<LowBalanceAlert>('GET', '/api/billing/low-balance-alert', tenantOnly(scope))).body,
  });
}

/** The latest recorded crossings of it, newest first. */
export function useLowBalanceCrossings(scope: RequestScope, limit = 10) {
  return useQuery({
    queryKey: ['low-balance-crossings', scope.tenantId, limit],
    queryFn: async () => (await request<LowBalanceCrossing[]>('GET', `/api/billing/low-balance-alert/crossings?limit=${limit}`, tenantOnly(scope))).body,
  });
}

/** The tenant's monthly budgets per OAuth client and product key, with this month's spent and held (tenant admins). */
export function useBudgets(scope: RequestScope) {
  return useQuery({
    queryKey: ['budgets', scope.tenantId],
    queryFn: () => requestAll<Budget>('/api/billing/budgets?limit=1000', tenantOnly(scope)),
  });
}

export function useSubscription(scope: RequestScope) {
  return useQuery({
    queryKey: ['subscription', scope.tenantId],
    queryFn: async () => (await request<Subscription>('GET', '/api/billing/subscription', tenantOnly(scope))).body,
  });
}
