import type { TenantEntity } from '@flagship/persistence';
import { RedisKeys } from '@flagship/redis';
import { ENVIRONMENTS, flagServices, TENANT } from '../flags/flag-services.fixture';
import type { TenantCreatedHook } from '../tenants/tenants.service';
import type { UserEntity } from '../users/user.entity';
import { demoFlags } from './sandbox-demo';
import { SandboxService } from './sandbox.service';

const MAKER = { id: '00000000-0000-4000-8000-0000000000d4' } as UserEntity;
const tenantOf = (isSandbox: boolean) => ({ id: TENANT, isSandbox, sandboxExpiresAt: isSandbox ? new Date(Date.now() + 86_400_000) : null }) as TenantEntity;

/** The sandbox's seeding over the flags service and its in-memory repository: the tenant's creation hook, as TenantsService runs it. */
describe('SandboxService', () => {
  let s: ReturnType<typeof flagServices>;
  let hook: TenantCreatedHook;
  let sandbox: SandboxService;

  beforeEach(() => {
    s = flagServices();
    const at = new Date(0);
    sandbox = new SandboxService(
      { addCreatedHook: (h) => void (hook = h) },
      s.service,
      { create: async (tenantId, fields) => ({ tenantId, id: '00000000-0000-4000-8000-0000000000e5', ...fields, createdAt: at, updatedAt: at }) },
      { scard: async () => 0, get: async () => null },
      new RedisKeys('test:'),
    );
    sandbox.onModuleInit();
  });

  const createTenant = (tenant: TenantEntity, after?: () => Promise<void>) =>
    s.repo.transactions.run(async (m) => {
      await hook.onTenantCreated(m, tenant, MAKER);
      await after?.();
    });

  it('writes the demo flags through the flags service: valid, on in every environment, audited as the creator, announced once the tenant is committed', async () => {
    const keys = demoFlags().map((f) => f.key);
    let announcedBeforeCommit = -1;
    await createTenant(tenantOf(true), async () => void (announcedBeforeCommit = s.announced.length));
    expect(announcedBeforeCommit).toBe(0);
    expect(s.announced.map((a) => [a.flagKey, a.environments])).toEqual(keys.map((k) => [k, ENVIRONMENTS]));
    expect(s.repo.auditRows.map((a) => [a.flagKey, a.action, a.actor])).toEqual(keys.map((k) => [k, 'create', `user:${MAKER.id}`]));
    for (const env of ENVIRONMENTS) expect((await s.repo.definitions(TENANT, env)).map((d) => [d.key, d.enabled])).toEqual([...keys].sort().map((k) => [k, true]));
    expect(s.repo.countBytes(TENANT)).toBeGreaterThan(0);
    expect((await sandbox.demoData(tenantOf(true))).flags).toEqual(keys);
  });

  it('writes and announces nothing when the tenant’s creation rolls back, and nothing for a tenant that is not a sandbox', async () => {
    await expect(createTenant(tenantOf(true), () => Promise.reject(new Error('tenant refused')))).rejects.toThrow('tenant refused');
    await createTenant(tenantOf(false));
    expect([s.repo.countFlags(TENANT), s.repo.auditRows.length, s.announced.length]).toEqual([0, 0, 0]);
  });
});
