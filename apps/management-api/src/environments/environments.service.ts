import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { isUniqueViolation, type TenantEntity, TransactionRunner, type Tx } from '@flagship/persistence';
import { ProblemException } from '@flagship/problem-details';
import { Quotas } from '../quotas/quotas';
import { TenantsService } from '../tenants/tenants.service';
import { DomainEvents } from '../webhooks/domain-events';
import type { EnvironmentEntity } from './environment.entity';
import { EnvironmentProblems } from './environments.errors';
import { EnvironmentsRepository } from './environments.repository';
import type { CreateEnvironmentDto, EnvironmentDto, UpdateEnvironmentDto } from './environments.dto';

const toDto = (e: EnvironmentEntity): EnvironmentDto => ({ key: e.key, name: e.name, requireApproval: e.requireApproval, createdAt: e.createdAt.toISOString() });

/** Each tenant starts with production, staging and development; `X-Environment` picks one. */
@Injectable()
export class EnvironmentsService implements OnModuleInit {
  constructor(
    private readonly transactions: TransactionRunner,
    private readonly repo: EnvironmentsRepository,
    private readonly tenants: TenantsService,
    private readonly quotas: Quotas,
    /** Webhooks hear environment changes: recorded in the change's transaction. */
    @Inject(DomainEvents) private readonly domainEvents: Pick<DomainEvents, 'record'>,
  ) {}

  onModuleInit(): void {
    this.tenants.addCreatedHook({ onTenantCreated: (m: Tx, t: TenantEntity) => this.repo.insertDefaults(m, t.id) });
  }

  async list(tenantId: string): Promise<EnvironmentDto[]> {
    return (await this.repo.list(tenantId)).map(toDto);
  }

  async create(tenantId: string, dto: CreateEnvironmentDto): Promise<EnvironmentDto> {
    try {
      return toDto(
        await this.transactions.run(async (m) => {
          await this.quotas.reserve(m, 'environments-per-tenant', tenantId);
          const env = await this.repo.insert(m, tenantId, dto.key, dto.name);
          // Its copy of every flag is held by the evaluators like any other: it counts against the byte quota.
          await this.quotas.reserve(m, 'flag-bytes-per-tenant', tenantId, await this.repo.addFlagsTo(m, tenantId, dto.key), { written: true });
          await this.domainEvents.record(m, tenantId, { type: 'environment.updated', data: { environment: dto.key, name: dto.name, action: 'create' } });
          return env;
        }),
      );
    } catch (err) {
      if (isUniqueViolation(err)) throw new ProblemException(EnvironmentProblems['environment-exists'], `Environment ${dto.key} exists.`);
      throw err;
    }
  }

  /** Renames it, or turns approvals on or off (the flag changes pending stay as they are). */
  async update(tenantId: string, key: string, dto: UpdateEnvironmentDto): Promise<EnvironmentDto> {
    const env = await this.transactions.run(async (m) => {
      const updated = await this.repo.update(m, tenantId, key, { name: dto.name, requireApproval: dto.requireApproval });
      if (!updated) throw new ProblemException(EnvironmentProblems['environment-not-found'], `No environment "${key}" in this tenant.`);
      // Webhooks hear a rename and approvals turned on or off, in the change's transaction.
      await this.domainEvents.record(m, tenantId, { type: 'environment.updated', data: { environment: key, name: updated.name, requireApproval: updated.requireApproval, action: 'update' } });
      return updated;
    });
    return toDto(env);
  }

  /** The tenant's environments where a change to a flag's settings needs an approved change request. */
  approvalRequired(tenantId: string, m?: Tx): Promise<string[]> {
    return this.repo.approvalRequired(tenantId, m);
  }

  /** The environment a request names (`X-Environment`, default production); unknown is 404. */
  async resolve(tenantId: string, requested: string | undefined): Promise<string> {
    const key = requested === undefined || requested === '' ? 'production' : requested;
    if (!(await this.repo.find(tenantId, key))) {
      throw new ProblemException(EnvironmentProblems['environment-not-found'], `No environment "${key}" in this tenant.`);
    }
    return key;
  }
}
