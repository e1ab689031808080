import { Reflector } from '@nestjs/core';
import { roleAtLeast, type Scope, SCOPES, type TenantRole } from '@flagship/domain';
import { ProblemException } from '@flagship/problem-details';
import type { CallerContext } from '@flagship/service-kit';
import { AppModule } from '../app.module';
import type { ManagementApiConfig } from '../env.schema';
import { loadManagementApiConfig } from '../env.schema';
import { EVALUATE_ACCESS } from '../flags/evaluate/evaluate.route';
import { FAKE_TX } from '../testing/inline-transactions';
import { routesOf } from '../testing/nest-routes';
import { problemOf } from '../testing/problem-of';
import { FakeTenantsRepository } from '../tenants/tenants.repository.fake';
import type { UserEntity } from '../users/user.entity';
import type { UsersRepository } from '../users/users.repository';
import { canonicalOf, decideAccess, type RouteAccess, requestedTenant, routeAccessOf, tenantRoute } from './access-decision';
import type { TenantAccessRule } from './auth.decorators';
import type { ClientTokenPort } from './client-token.port';
import type { IdTokenVerifier } from './id-token.verifier';
import { TenantAccessResolver } from './tenant-access.resolver';

// ---- Every endpoint's requirement, as CONTRACT.md sections 2 to 4 and the seed give them. ----
const PUBLIC: RouteAccess = { public: true, platformAdminOnly: false, usersOnly: false };
/** Any caller with a token, user or client. */
const SIGNED_IN: RouteAccess = { public: false, platformAdminOnly: false, usersOnly: false };
const USERS: RouteAccess = { ...SIGNED_IN, usersOnly: true };
const PLATFORM_ADMINS: RouteAccess = { ...SIGNED_IN, usersOnly: true, platformAdminOnly: true };
const inTenant = (role: TenantRole, scopes?: Scope[], opts: Omit<TenantAccessRule, 'role' | 'scopes'> = {}): RouteAccess => tenantRoute({ role, ...(scopes ? { scopes } : {}), ...opts });
const HEADER = { headerRequired: true } as const;
const PATH = { tenantFrom: 'path' } as const;

const ENDPOINTS: Record<string, RouteAccess> = {
  'GET /healthz': PUBLIC,
  'GET /readyz': PUBLIC,
  'GET /metrics': PUBLIC,
  'POST /oauth/token': PUBLIC,
  'GET /.well-known/jwks.json': PUBLIC,
  'GET /.well-known/oauth-authorization-server': PUBLIC,
  'GET /api/v1/auth/config': PUBLIC,
  'POST /api/v1/auth/signup': PUBLIC,
  'POST /api/v1/auth/login': PUBLIC,
  'POST /api/v1/auth/signin/:provider': PUBLIC,
  'POST /api/v1/auth/forgot-password': PUBLIC,
  'POST /dev/idp/accounts': PUBLIC,
  'POST /dev/idp/token': PUBLIC,
  'GET /dev/idp/.well-known/jwks.json': PUBLIC,

  'GET /api/tenants': SIGNED_IN,
  'POST /api/tenants': USERS,
  'GET /api/invitations': USERS,
  'POST /api/invitations/:invitationId/accept': USERS,
  'POST /api/invitations/:invitationId/decline': USERS,
  'GET /api/tenants/:tenantId/users': inTenant('viewer', undefined, PATH),
  'POST /api/tenants/:tenantId/users': inTenant('admin', undefined, PATH),
  'GET /api/tenants/:tenantId/invitations': inTenant('admin', undefined, PATH),
  'DELETE /api/tenants/:tenantId/invitations/:invitationId': inTenant('admin', undefined, PATH),
  'PATCH /api/tenants/:tenantId/users/:userId': inTenant('admin', undefined, PATH),
  'DELETE /api/tenants/:tenantId/users/:userId': inTenant('admin', undefined, PATH),

  'GET /admin/users': PLATFORM_ADMINS,
  'POST /admin/tenants/:tenantId/entitlements': PLATFORM_ADMINS,
  'POST /admin/tenants/:tenantId/credits': PLATFORM_ADMINS,
  'PATCH /admin/tenants/:tenantId': PLATFORM_ADMINS,

  'POST /api/oauth/clients': inTenant('admin', undefined, HEADER),
  'GET /api/oauth/clients': inTenant('admin'),
  'DELETE /api/oauth/clients/:clientId': inTenant('admin'),
  'POST /api/oauth/clients/:clientId/rotate-secret': inTenant('admin'),

  'POST /api/webhooks': inTenant('admin', undefined, HEADER),
  'GET /api/webhooks': inTenant('admin'),
  'DELETE /api/webhooks/:webhookId': inTenant('admin'),
  'GET /api/webhooks/:webhookId/deliveries': inTenant('admin'),
  'POST /api/webhooks/:webhookId/deliveries/:deliveryId/replay': inTenant('admin'),

  'GET /v1/users/:userId/product-tours/:tourKey': inTenant('viewer'),
  'PUT /v1/users/:userId/product-tours/:tourKey': inTenant('viewer'),

  'GET /api/projects': inTenant('viewer', ['projects:read'], HEADER),
  'POST /api/projects': inTenant('editor', ['projects:write']),
  'GET /api/projects/:id': inTenant('viewer', ['projects:read']),
  'PATCH /api/projects/:id': inTenant('editor', ['projects:write']),

  'GET /api/environments': inTenant('viewer', ['flags:read']),
  'POST /api/environments': inTenant('admin'),
  'PATCH /api/environments/:environmentKey': inTenant('admin'),

  'GET /api/flags': inTenant('viewer', ['flags:read'], HEADER),
  'POST /api/flags': inTenant('editor', ['flags:write'], HEADER),
  'POST /api/flags/import': inTenant('editor', ['flags:write']),
  'GET /api/flags/export': inTenant('viewer', ['flags:read']),
  'POST /api/flags/projects/:projectId/flags': inTenant('editor', ['flags:write']),
  'GET /api/flags/:flagKey': inTenant('viewer', ['flags:read'], HEADER),
  'PATCH /api/flags/:flagKey': inTenant('editor', ['flags:write']),
  'DELETE /api/flags/:flagKey': inTenant('editor', ['flags:write']),
  'GET /api/flags/:flagKey/variations': inTenant('viewer', ['flags:read']),
  'GET /api/flags/:flagKey/audit': inTenant('viewer', ['flags:read']),
  // Approvals (issue 34): who of the editors may approve is the service's rule (approvalRefusal), not the route's.
  'GET /api/flags/:flagKey/change-requests': inTenant('viewer', ['flags:read']),
  'GET /api/flags/:flagKey/change-requests/:id': inTenant('viewer', ['flags:read']),
  'POST /api/flags/:flagKey/change-requests': inTenant('editor', ['flags:write']),
  'POST /api/flags/:flagKey/change-requests/:id/comments': inTenant('editor', ['flags:write']),
  'POST /api/flags/:flagKey/change-requests/:id/approve': inTenant('editor', ['flags:write']),
  'POST /api/flags/:flagKey/change-requests/:id/reject': inTenant('editor', ['flags:write']),
  'POST /api/flags/:flagKey/change-requests/:id/apply': inTenant('editor', ['flags:write']),
  'GET /api/flags/:flagKey/scheduled-changes': inTenant('viewer', ['flags:read']),
  'POST /api/flags/:flagKey/scheduled-changes': inTenant('editor', ['flags:write']),
  'DELETE /api/flags/:flagKey/scheduled-changes/:id': inTenant('editor', ['flags:write']),
  'GET /api/flag-stream': inTenant('viewer', ['flags:read'], HEADER),

  'GET /api/segments': inTenant('viewer', ['flags:read'], HEADER),
  'POST /api/segments': inTenant('editor', ['flags:write'], HEADER),
  'GET /api/segments/:segmentKey': inTenant('viewer', ['flags:read'], HEADER),
  'PATCH /api/segments/:segmentKey': inTenant('editor', ['flags:write']),
  'DELETE /api/segments/:segmentKey': inTenant('editor', ['flags:write']),
  'GET /api/segments/:segmentKey/audit': inTenant('viewer', ['flags:read']),
  // Answered outside Nest (the lean evaluate route): its rule is EVALUATE_ACCESS.
  'POST /api/flags/:flagKey/evaluate': inTenant('viewer', ['flags:evaluate']),
  'POST /api/flags/projects/:projectId/flags/:flagKey/evaluate': inTenant('viewer', ['flags:evaluate']),

  'GET /api/sandbox/status': inTenant('viewer', ['flags:read'], HEADER),
  'GET /api/sandbox/indicators': inTenant('viewer', ['flags:read']),
  'GET /api/sandbox/demo-data': inTenant('viewer', ['flags:read']),

  'GET /api/billing/credits': inTenant('viewer'),
  'GET /api/billing/low-balance-alert': inTenant('admin'),
  'PUT /api/billing/low-balance-alert': inTenant('admin'),
  'DELETE /api/billing/low-balance-alert': inTenant('admin'),
  'GET /api/billing/low-balance-alert/crossings': inTenant('admin'),
  'GET /api/billing/budgets': inTenant('admin'),
  'PUT /api/billing/budgets/:kind/:scopeId': inTenant('admin'),
  'DELETE /api/billing/budgets/:kind/:scopeId': inTenant('admin'),
  // Reading a binding is reading flags; binding a route decides where AI spend goes: admins (users only).
  'GET /api/gateway/bindings': inTenant('viewer', ['flags:read']),
  'GET /api/gateway/bindings/:productKey': inTenant('viewer', ['flags:read']),
  'PUT /api/gateway/bindings/:productKey': inTenant('admin'),
  'DELETE /api/gateway/bindings/:productKey': inTenant('admin'),
  'GET /api/gateway/bindings/:productKey/audit': inTenant('viewer', ['flags:read']),
  'GET /api/gateway/bindings/:productKey/rollout': inTenant('admin'),
  'GET /api/usage': inTenant('admin'),
  'GET /api/usage/summary': inTenant('admin'),
  'GET /api/usage/daily': inTenant('admin'),
  'GET /api/usage/export': inTenant('admin'),
  'GET /api/usage/experiments/:flagKey': inTenant('admin'),
  'POST /api/billing/checkout': inTenant('admin', undefined, HEADER),
  'POST /api/billing/portal': inTenant('admin'),
  'GET /api/billing/subscription': inTenant('admin'),
};

/** What the app serves and what each route asks, read from the real controllers' decorators (the app is not started). */
function servedEndpoints(): Record<string, RouteAccess> {
  const config = loadManagementApiConfig({ NODE_ENV: 'test', IDP_MODE: 'dev' });
  const reflector = new Reflector();
  const served: Record<string, RouteAccess> = {};
  for (const r of routesOf(AppModule.forConfig(config))) {
    const key = `${r.method} ${r.path}`;
    if (served[key]) throw new Error(`${key} is served twice`);
    served[key] = routeAccessOf((k) => reflector.getAllAndOverride(k, [r.handler, r.controller]));
  }
  served['POST /api/flags/:flagKey/evaluate'] = tenantRoute(EVALUATE_ACCESS);
  served['POST /api/flags/projects/:projectId/flags/:flagKey/evaluate'] = tenantRoute(EVALUATE_ACCESS);
  return served;
}

// ---- The world the matrix runs in: tenants T and U, an expired sandbox S, a deleted tenant. ----
type TenantKey = 'T' | 'U' | 'S' | 'gone';
type Naming = 'none' | TenantKey | 'missing' | 'malformed';

interface Principal {
  name: string;
  kind: 'user' | 'client';
  platformAdmin?: boolean;
  /** Users: their memberships, in the order they joined. */
  memberships?: Array<[TenantKey, TenantRole]>;
  /** Clients: the tenant their token is bound to, and its scopes. */
  own?: TenantKey;
  scopes?: readonly Scope[];
}

const ALL = SCOPES;
const PRINCIPALS: Principal[] = [
  { name: 'admin of T', kind: 'user', memberships: [['T', 'admin']] },
  { name: 'editor of T', kind: 'user', memberships: [['T', 'editor']] },
  { name: 'viewer of T', kind: 'user', memberships: [['T', 'viewer']] },
  // Canonical: the earliest tenant where they are admin (U), not the earliest they joined (T).
  { name: 'editor of T, admin of U', kind: 'user', memberships: [['T', 'editor'], ['U', 'admin']] },
  { name: 'admin of U only', kind: 'user', memberships: [['U', 'admin']] },
  { name: 'admin of the expired sandbox', kind: 'user', memberships: [['S', 'admin']] },
  { name: 'platform admin, admin of U', kind: 'user', platformAdmin: true, memberships: [['U', 'admin']] },
  { name: 'platform admin, viewer of T', kind: 'user', platformAdmin: true, memberships: [['T', 'viewer']] },
  { name: 'user of no tenant', kind: 'user', memberships: [] },
  ...ALL.map((s): Principal => ({ name: `client of T with ${s}`, kind: 'client', own: 'T', scopes: [s] })),
  { name: 'client of T with every scope', kind: 'client', own: 'T', scopes: ALL },
  { name: 'client of the expired sandbox with every scope', kind: 'client', own: 'S', scopes: ALL },
  { name: 'client of a deleted tenant with every scope', kind: 'client', own: 'gone', scopes: ALL },
];
const NAMINGS: Naming[] = ['none', 'T', 'U', 'S', 'missing', 'malformed'];
const EXISTS: Record<TenantKey, boolean> = { T: true, U: true, S: true, gone: false };

/** CONTRACT.md section 2 (roles, active tenant, 403 vs 404), section 3 (scopes, tenant-bound client tokens), and the seed's required X-Tenant-ID, as plainly as they read. */
function contract(endpoint: string, p: Principal, naming: Naming): string {
  const route = ENDPOINTS[endpoint];
  if (route.public) return 'ok';
  if (route.platformAdminOnly && !p.platformAdmin) return '403 platform-admin-required';
  if (route.usersOnly && p.kind === 'client') return '403 users-only';
  const rule = route.tenant;
  if (!rule) return 'ok';
  let acting: TenantKey;
  if (p.kind === 'client') {
    // A route without scopes is for users; a client token acts only in its own tenant, with every scope named.
    if (!rule.scopes) return '403 users-only';
    if (naming !== 'none' && naming !== p.own) return '403 tenant-access-denied';
    if (!rule.scopes.every((s) => p.scopes!.includes(s))) return '403 insufficient-scope';
    if (!EXISTS[p.own!]) return '403 tenant-access-denied';
    acting = p.own!;
  } else {
    const roles = new Map(p.memberships);
    if (naming === 'none') {
      if (rule.headerRequired) return '400 tenant-header-required';
      const canonical = p.memberships!.find(([, r]) => r === 'admin') ?? p.memberships![0];
      if (!canonical) return '403 tenant-access-denied';
      acting = canonical[0];
    } else if (!roles.has(naming as TenantKey)) {
      // Existence is told only to platform admins.
      const exists = naming in EXISTS && EXISTS[naming as TenantKey];
      return p.platformAdmin && !exists ? '404 tenant-not-found' : '403 tenant-access-denied';
    } else acting = naming as TenantKey;
    if (!roleAtLeast(roles.get(acting)!, rule.role)) return '403 role-required';
  }
  // An expired sandbox is read-only: reads (GET) and evaluations (viewer) go on.
  if (acting === 'S' && rule.role !== 'viewer' && !endpoint.startsWith('GET ')) return '403 sandbox-expired';
  return `ok in ${acting}`;
}

describe('the authorization matrix (role x scope x tenant)', () => {
  let served: Record<string, RouteAccess>;
  let repo: FakeTenantsRepository;
  let ids: Record<TenantKey | 'missing' | 'malformed', string>;
  let names: Map<string, TenantKey>;
  const users = new Map<string, UserEntity>();
  const now = Date.parse('2026-06-01T00:00:00Z');

  beforeAll(async () => {
    served = servedEndpoints();
    repo = new FakeTenantsRepository();
    const t = repo.seedTenant({ name: 'T' });
    const u = repo.seedTenant({ name: 'U' });
    const s = repo.seedTenant({ name: 'S', isSandbox: true, sandboxExpiresAt: new Date(now - 1000) });
    ids = { T: t.id, U: u.id, S: s.id, gone: '00000000-0000-4000-8000-00000000dead', missing: '00000000-0000-4000-8000-000000000404', malformed: 'not-a-uuid' };
    names = new Map(Object.entries(ids).map(([k, v]) => [v, k as TenantKey]));
    for (const p of PRINCIPALS.filter((x) => x.kind === 'user')) {
      const user = repo.seedUser(`${p.name.replace(/\W+/g, '-')}@flagship.test`);
      users.set(p.name, user);
      for (const [key, role] of p.memberships!) await repo.addMember(FAKE_TX, ids[key], user.id, role);
    }
  });

  const callerOf = (p: Principal): CallerContext =>
    p.kind === 'client'
      ? { kind: 'client', callerId: `client:${p.name}`, tenantId: ids[p.own!], scopes: [...p.scopes!] }
      : { kind: 'user', callerId: `user:${users.get(p.name)!.id}`, ...(p.platformAdmin ? { isPlatformAdmin: true } : {}) };

  /** What decideAccess answers, as the contract's words: `ok in T`, `403 role-required`... */
  async function decided(endpoint: string, p: Principal, naming: Naming): Promise<string> {
    const requested = naming === 'none' ? undefined : ids[naming];
    const safe = endpoint.startsWith('GET ');
    const question = { route: served[endpoint], caller: callerOf(p), ...(p.kind === 'user' ? { userId: users.get(p.name)!.id } : {}), ...(requested ? { requested } : {}), safe, now };
    try {
      const grant = await decideAccess(question, repo);
      return grant.tenant ? `ok in ${names.get(grant.tenant.id)}` : 'ok';
    } catch (err) {
      if (!(err instanceof ProblemException)) throw err;
      return `${err.problem.status} ${err.problem.slug}`;
    }
  }

  it("holds every endpoint to its requirement: an endpoint added, removed or changed fails here until the table says so", () => {
    expect(served).toEqual(ENDPOINTS);
  });

  it.each(Object.keys(ENDPOINTS))('%s: every principal, naming every tenant, gets what the contract says', async (endpoint) => {
    const route = served[endpoint];
    // A path's tenant is always named; X-Tenant-ID may be left out.
    const namings = route.tenant?.tenantFrom === 'path' ? NAMINGS.filter((n) => n !== 'none') : NAMINGS;
    const wrong: string[] = [];
    for (const p of PRINCIPALS) {
      for (const naming of namings) {
        const [got, want] = [await decided(endpoint, p, naming), contract(endpoint, p, naming)];
        if (got !== want) wrong.push(`${p.name} naming ${naming}: got ${got}, the contract says ${want}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  // The contract's own examples, spelled out (they also check the matrix's reading of it).
  it.each([
    ['a viewer reads flags in the tenant they name', 'GET /api/flags', 'viewer of T', 'T', 'ok in T'],
    ['a viewer cannot change a flag', 'PATCH /api/flags/:flagKey', 'viewer of T', 'T', '403 role-required'],
    ['an editor changes flags in their canonical tenant', 'PATCH /api/flags/:flagKey', 'editor of T', 'none', 'ok in T'],
    ['an editor cannot manage OAuth clients', 'GET /api/oauth/clients', 'editor of T', 'T', '403 role-required'],
    ['an editor cannot read the webhooks or their delivery log', 'GET /api/webhooks/:webhookId/deliveries', 'editor of T', 'T', '403 role-required'],
    ['a client cannot manage webhooks, whatever its scopes', 'POST /api/webhooks', 'client of T with every scope', 'none', '403 users-only'],
    ['a webhook is created only in the tenant named', 'POST /api/webhooks', 'admin of T', 'none', '400 tenant-header-required'],
    ['without X-Tenant-ID, a user acts in the earliest tenant where they are admin', 'GET /api/oauth/clients', 'editor of T, admin of U', 'none', 'ok in U'],
    ['X-Tenant-ID of a tenant where they are a member wins over the canonical one', 'GET /api/projects/:id', 'editor of T, admin of U', 'T', 'ok in T'],
    ['the seed requires X-Tenant-ID of users here', 'GET /api/flags', 'admin of T', 'none', '400 tenant-header-required'],
    ['a tenant the user is not in is 403', 'GET /api/tenants/:tenantId/users', 'admin of U only', 'T', '403 tenant-access-denied'],
    ['a tenant that does not exist is 403 to a user', 'GET /api/tenants/:tenantId/users', 'admin of U only', 'missing', '403 tenant-access-denied'],
    ['and 404 to a platform admin', 'GET /api/tenants/:tenantId/users', 'platform admin, admin of U', 'missing', '404 tenant-not-found'],
    ['a platform admin is not a member of every tenant', 'GET /api/tenants/:tenantId/users', 'platform admin, admin of U', 'T', '403 tenant-access-denied'],
    ['platform admins only', 'POST /admin/tenants/:tenantId/credits', 'admin of T', 'none', '403 platform-admin-required'],
    ['a platform admin may', 'POST /admin/tenants/:tenantId/credits', 'platform admin, viewer of T', 'none', 'ok'],
    ['a client reads flags with flags:read', 'GET /api/flags', 'client of T with flags:read', 'none', 'ok in T'],
    ['a client cannot write flags with flags:read', 'POST /api/flags', 'client of T with flags:read', 'none', '403 insufficient-scope'],
    ['evaluating needs flags:evaluate', 'POST /api/flags/:flagKey/evaluate', 'client of T with flags:read', 'none', '403 insufficient-scope'],
    ['projects need projects:*, not flags:*', 'GET /api/projects/:id', 'client of T with flags:read', 'none', '403 insufficient-scope'],
    ['ai:invoke opens nothing here', 'GET /api/flags/export', 'client of T with ai:invoke', 'none', '403 insufficient-scope'],
    ['a client token naming another tenant in X-Tenant-ID is 403', 'GET /api/flags', 'client of T with every scope', 'U', '403 tenant-access-denied'],
    ['... even one that does not exist', 'GET /api/flags', 'client of T with every scope', 'missing', '403 tenant-access-denied'],
    ['naming its own tenant is fine', 'GET /api/flags', 'client of T with every scope', 'T', 'ok in T'],
    ['billing, users and OAuth clients are for users', 'GET /api/billing/credits', 'client of T with every scope', 'none', '403 users-only'],
    ['creating tenants is for users', 'POST /api/tenants', 'client of T with every scope', 'none', '403 users-only'],
    ['a client lists its own tenant', 'GET /api/tenants', 'client of T with ai:invoke', 'none', 'ok'],
    ["a deleted tenant's token acts nowhere", 'GET /api/flags', 'client of a deleted tenant with every scope', 'none', '403 tenant-access-denied'],
    ['an expired sandbox is read', 'GET /api/flags', 'admin of the expired sandbox', 'S', 'ok in S'],
    ['and evaluated', 'POST /api/flags/:flagKey/evaluate', 'client of the expired sandbox with every scope', 'none', 'ok in S'],
    ['but takes no changes', 'POST /api/flags', 'admin of the expired sandbox', 'S', '403 sandbox-expired'],
    ['its admin still reads what only admins read (fixed: these were refused)', 'GET /api/usage', 'admin of the expired sandbox', 'S', 'ok in S'],
    ['... its OAuth clients too', 'GET /api/oauth/clients', 'admin of the expired sandbox', 'S', 'ok in S'],
    ['... but creates none', 'POST /api/oauth/clients', 'admin of the expired sandbox', 'S', '403 sandbox-expired'],
  ])('%s (%s, %s, naming %s)', async (_what, endpoint, who, naming, outcome) => {
    const p = PRINCIPALS.find((x) => x.name === who)!;
    expect(await decided(endpoint, p, naming as Naming)).toBe(outcome);
    expect(contract(endpoint, p, naming as Naming)).toBe(outcome);
  });

  it('refuses what it can without reading the store: a client naming another tenant or lacking a scope, a missing X-Tenant-ID, users-only and admin-only routes', async () => {
    const asked: string[] = [];
    const counting = {
      findById: (id: string) => (asked.push('findById'), repo.findById(id)),
      membershipWithTenant: (t: string, u: string) => (asked.push('membershipWithTenant'), repo.membershipWithTenant(t, u)),
      tenantsOfUser: (u: string) => (asked.push('tenantsOfUser'), repo.tenantsOfUser(u)),
    };
    const client = callerOf(PRINCIPALS.find((x) => x.name === 'client of T with flags:read')!);
    const viewer = users.get('viewer of T')!.id;
    for (const q of [
      { route: served['GET /api/flags'], caller: client, requested: ids.U, now },
      { route: served['POST /api/flags'], caller: client, now },
      { route: served['GET /api/flags'], caller: { kind: 'user', callerId: `user:${viewer}` } as CallerContext, userId: viewer, now },
      { route: served['POST /api/tenants'], caller: client, now },
      { route: served['GET /admin/users'], caller: { kind: 'user', callerId: `user:${viewer}` } as CallerContext, userId: viewer, now },
    ]) {
      expect((await problemOf(decideAccess(q, counting))).problem.status).toBeGreaterThanOrEqual(400);
    }
    expect(asked).toEqual([]);
  });

  it('the tenant named: the path\'s for path routes (X-Tenant-ID ignored), else X-Tenant-ID; empty names none', () => {
    const path = served['GET /api/tenants/:tenantId/users'].tenant!;
    const header = served['GET /api/flags'].tenant!;
    expect(requestedTenant(path, { tenantId: ids.T }, { 'x-tenant-id': ids.U })).toBe(ids.T);
    expect(requestedTenant(header, { tenantId: ids.T }, { 'x-tenant-id': ids.U })).toBe(ids.U);
    expect(requestedTenant(header, {}, { 'x-tenant-id': '' })).toBeUndefined();
    expect(requestedTenant(header, {}, { 'x-tenant-id': [ids.T, ids.U] })).toBeUndefined();
    expect(requestedTenant(header, {}, {})).toBeUndefined();
  });

  it('the canonical tenant is the earliest membership with admin, else the earliest', async () => {
    const both = users.get('editor of T, admin of U')!.id;
    expect(canonicalOf(await repo.tenantsOfUser(both))?.tenant.id).toBe(ids.U);
    expect(canonicalOf(await repo.tenantsOfUser(users.get('viewer of T')!.id))?.tenant.id).toBe(ids.T);
    expect(canonicalOf([])).toBeUndefined();
  });

  describe('TenantAccessResolver.authorize', () => {
    const resolver = () =>
      new TenantAccessResolver({} as IdTokenVerifier, {} as UsersRepository, repo, {} as ClientTokenPort, {} as ManagementApiConfig);

    it("fills in the caller's tenant, plan and role; a client gets no role", async () => {
      const user = users.get('editor of T')!;
      const caller: CallerContext = { kind: 'user', callerId: `user:${user.id}` };
      const tenant = await resolver().authorize({ caller, user, expiresAt: Infinity }, served['PATCH /api/flags/:flagKey'], ids.T);
      expect(tenant?.id).toBe(ids.T);
      expect(caller).toMatchObject({ tenantId: ids.T, plan: 'free', role: 'editor' });
      const client = callerOf(PRINCIPALS.find((x) => x.name === 'client of T with every scope')!);
      await resolver().authorize({ caller: client, expiresAt: Infinity }, served['GET /api/flags'], undefined);
      expect(client).toMatchObject({ tenantId: ids.T, plan: 'free' });
      expect(client.role).toBeUndefined();
      expect(await resolver().authorize({ caller: client, expiresAt: Infinity }, served['GET /api/tenants'], undefined)).toBeUndefined();
    });

    it("records a member's access at most once a minute, refused attempts included", async () => {
      const user = users.get('viewer of T')!;
      const membership = repo.memberships.find((ms) => ms.userId === user.id)!;
      const caller = (): CallerContext => ({ kind: 'user', callerId: `user:${user.id}` });
      membership.lastAccessedAt = new Date(Date.now() - 61_000);
      repo.now = Date.now();
      await resolver().authorize({ caller: caller(), user, expiresAt: Infinity }, served['GET /api/flags/export'], ids.T);
      const touched = membership.lastAccessedAt;
      expect(Date.now() - touched.getTime()).toBeLessThan(60_000);
      await resolver().authorize({ caller: caller(), user, expiresAt: Infinity }, served['GET /api/flags/export'], ids.T);
      expect(membership.lastAccessedAt).toBe(touched);
      membership.lastAccessedAt = new Date(Date.now() - 61_000);
      await problemOf(resolver().authorize({ caller: caller(), user, expiresAt: Infinity }, served['PATCH /api/flags/:flagKey'], ids.T));
      expect(Date.now() - membership.lastAccessedAt.getTime()).toBeLessThan(60_000);
    });
  });
});
