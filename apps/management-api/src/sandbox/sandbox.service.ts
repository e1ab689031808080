import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import type Redis from 'ioredis';
import type { TenantEntity, Tx } from '@flagship/persistence';
import { ProblemException } from '@flagship/problem-details';
import { REDIS, REDIS_KEYS, type RedisKeys } from '@flagship/redis';
import { FlagsService } from '../flags/flags.service';
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
    @Inject(TenantsService) private readonly tenants: Pick<TenantsService, 'addCreatedHook'>,
    @Inject(FlagsService) private readonly flags: Pick<FlagsService, 'createWithin' | 'present'>,
    @Inject(ProjectsRepository) private readonly projects: Pick<ProjectsRepository, 'create'>,
    @Inject(REDIS) private readonly redis: Pick<Redis, 'scard' | 'get'>,
    @Inject(REDIS_KEYS) private readonly keys: RedisKeys,
  ) {}

  onModuleInit(): void {
    this.tenants.addCreatedHook({ onTenantCreated: (m, tenant, creator) => (tenant.isSandbox ? this.seed(m, tenant, `user:${creator.id}`) : Promise.resolve()) });
  }

  /**
   * Demo data, written in the transaction that creates the tenant (environments exist by then), its
   * flags switched on in every environment through the flags service like any other flag write:
   * validated, within the tenant's limits, audited as `actor`'s, announced once committed.
   */
  async seed(m: Tx, tenant: TenantEntity, actor: string): Promise<void> {
    const project = await this.projects.create(tenant.id, { name: 'Demo shop', description: 'Sample flags to try evaluation with', color: '#f59e0b' }, m);
    await this.flags.createWithin(
      m,
      tenant.id,
      actor,
      demoFlags().map((f) => ({
        key: f.key,
        name: f.name,
        type: f.type,
        defaultValue: f.defaultValue,
        description: f.description,
        tags: ['demo'],
        projectId: project.id,
        variations: f.variations,
        targeting: { enabled: true, targets: f.targets, rules: f.rules, prerequisites: f.prerequisites },
      })),
    );
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
    return { flags: await this.flags.present(tenant.id, demoFlags().map((f) => f.key), 'production'), users: DEMO_USERS.map((u) => u.key) };
  }

  private sandboxOf(tenant: TenantEntity): Date {
    if (!tenant.isSandbox || !tenant.sandboxExpiresAt) {
      throw new ProblemException(SandboxProblems['not-a-sandbox'], 'This tenant is not a sandbox; create one with isSandbox: true.');
    }
    return tenant.sandboxExpiresAt;
  }
}
