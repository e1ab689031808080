import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import type Redis from 'ioredis';
import type { TenantEntity, Tx } from '@flagship/persistence';
import { ProblemException } from '@flagship/problem-details';
import { REDIS, REDIS_KEYS, type RedisKeys } from '@flagship/redis';
import { FlagsRepository } from '../flags/flags.repository';
import { ProjectsRepository } from '../projects/projects.repository';
import { TenantsService } from '../tenants/tenants.service';
import { DEMO_USERS, demoFlags } from './sandbox-demo';
import { SandboxProblems } from './sandbox.errors';

/**
 * Sandbox tenants (isSandbox): seeded at birth with a demo project, demo flags covering every kind
 * of targeting, and demo users; active until `sandboxExpiresAt` (SANDBOX_DAYS, default 14), then
 * read-only (the authorization guard refuses writes).
 */
@Injectable()
export class SandboxService implements OnModuleInit {
  constructor(
    private readonly tenants: TenantsService,
    private readonly flags: FlagsRepository,
    private readonly projects: ProjectsRepository,
    @Inject(REDIS) private readonly redis: Redis,
    @Inject(REDIS_KEYS) private readonly keys: RedisKeys,
  ) {}

  onModuleInit(): void {
    this.tenants.addCreatedHook({ onTenantCreated: (m, tenant) => (tenant.isSandbox ? this.seed(m, tenant) : Promise.resolve()) });
  }

  /** Demo data, written in the transaction that creates the tenant (environments exist by then). */
  async seed(m: Tx, tenant: TenantEntity): Promise<void> {
    const project = await this.projects.create(tenant.id, { name: 'Demo shop', description: 'Sample flags to try evaluation with', color: '#f59e0b' }, m);
    const ids: string[] = [];
    for (const f of demoFlags()) {
      const flag = await this.flags.insert(m, tenant.id, {
        key: f.key,
        projectId: project.id,
        name: f.name,
        type: f.type,
        defaultValue: f.defaultValue,
        description: f.description,
        tags: ['demo'],
        variations: f.variations,
      });
      for (const env of await this.flags.environmentsOf(tenant.id, flag.id, m)) {
        await this.flags.updateEnv(m, tenant.id, flag.id, env, 1, { enabled: true, targets: f.targets, rules: f.rules, prerequisites: f.prerequisites });
      }
      ids.push(flag.id);
    }
    // Counted like any flag write (a small, fixed set: no limit to check).
    await this.flags.measure(m, tenant.id, ids);
  }

  status(tenant: TenantEntity): { active: boolean; expiresAt: string } {
    const expiresAt = this.sandboxOf(tenant);
    return { active: expiresAt.getTime() > Date.now(), expiresAt: expiresAt.toISOString() };
  }

  async indicators(tenant: TenantEntity): Promise<{ flagsUsed: number; evaluations: number }> {
    this.sandboxOf(tenant);
    const [used, evaluations] = await Promise.all([
      this.redis.scard(this.keys.tenant(tenant.id, 'evaluated-flags')),
      this.redis.get(this.keys.tenant(tenant.id, 'evaluations')),
    ]);
    return { flagsUsed: used, evaluations: Number(evaluations ?? 0) };
  }

  async demoData(tenant: TenantEntity): Promise<{ flags: string[]; users: string[] }> {
    this.sandboxOf(tenant);
    const present = new Set((await this.flags.definitions(tenant.id, 'production')).map((d) => d.key));
    return { flags: demoFlags().map((f) => f.key).filter((k) => present.has(k)), users: DEMO_USERS.map((u) => u.key) };
  }

  private sandboxOf(tenant: TenantEntity): Date {
    if (!tenant.isSandbox || !tenant.sandboxExpiresAt) {
      throw new ProblemException(SandboxProblems['not-a-sandbox'], 'This tenant is not a sandbox; create one with isSandbox: true.');
    }
    return tenant.sandboxExpiresAt;
  }
}
