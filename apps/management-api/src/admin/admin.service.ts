import { Inject, Injectable, Logger } from '@nestjs/common';
import { APP_CONFIG } from '@flagship/config';
import { type TenantEntity, TransactionRunner } from '@flagship/persistence';
import { ProblemException, validationProblem } from '@flagship/problem-details';
import { CHANNELS, PUBSUB, type PubSub } from '@flagship/redis';
import { decodeCursor, type CallerContext } from '@flagship/service-kit';
import type { ManagementApiConfig } from '../env.schema';
import { toTenantDto } from '../tenants/tenants.service';
import { TenantsRepository } from '../tenants/tenants.repository';
import { UsersRepository } from '../users/users.repository';
import type { UserEntity } from '../users/user.entity';
import { AdminProblems } from './admin.errors';
import { CreditsRepository } from '@flagship/ledger';
import { AdminRepository } from './admin.repository';
import type { GrantCreditsDto, GrantEntitlementDto, PatchTenantAdminDto } from './admin.dto';

/** Platform administration (CONTRACT.md section 4): users, entitlements, credits, tenant switches. */
@Injectable()
export class AdminService {
  private readonly logger = new Logger('AdminService');

  constructor(
    private readonly transactions: TransactionRunner,
    private readonly users: UsersRepository,
    private readonly tenants: TenantsRepository,
    private readonly repo: AdminRepository,
    private readonly credits: CreditsRepository,
    @Inject(APP_CONFIG) private readonly config: ManagementApiConfig,
    @Inject(PUBSUB) private readonly pubsub: PubSub,
  ) {}

  listUsers(limit: number, cursor?: string): Promise<UserEntity[]> {
    return this.users.list(limit, decodeCursor(cursor));
  }

  async grantEntitlement(tenantId: string, dto: GrantEntitlementDto) {
    await this.tenantOr404(tenantId);
    this.checkProductKey(dto.productKey);
    const validUntil = dto.validUntil ? new Date(dto.validUntil) : null;
    if (validUntil && validUntil.getTime() <= Date.now()) throw validationProblem({ validUntil: 'must be in the future' });
    const e = await this.repo.upsertEntitlement(tenantId, dto.productKey, dto.tier, validUntil);
    await this.announce(tenantId);
    return { tenantId: e.tenantId, productKey: e.productKey, tier: e.tier, validUntil: e.validUntil?.toISOString() ?? null, updatedAt: e.updatedAt.toISOString() };
  }

  async grantCredits(tenantId: string, dto: GrantCreditsDto, caller: CallerContext) {
    await this.tenantOr404(tenantId);
    const b = await this.transactions.run((m) => this.credits.grantCredits(m, tenantId, { amount: dto.amount, reason: dto.reason, grantedBy: caller.callerId }));
    await this.announce(tenantId);
    return { tenantId, balance: b.balance, reserved: b.reserved };
  }

  async patchTenant(tenantId: string, dto: PatchTenantAdminDto) {
    await this.tenantOr404(tenantId);
    const t = (await this.tenants.update(tenantId, dto))!;
    await this.announce(tenantId);
    return { ...toTenantDto(t), zeroRated: t.zeroRated, hostedProviderAllowed: t.hostedProviderAllowed };
  }

  /**
   * Tells the AI gateway's caches (entitlements, zeroRated, hostedProviderAllowed; credits for good
   * measure). The change is committed either way: a lost message only delays the gateway until its
   * cache entry expires (GATEWAY_TENANT_CACHE_MS).
   */
  private async announce(tenantId: string): Promise<void> {
    await this.pubsub.publish(CHANNELS.tenantChanged, { tenantId }).catch((err: Error) => {
      this.logger.warn({ err, tenantId }, 'tenant change saved but not announced; the gateway sees it when its cache expires');
    });
  }

  private checkProductKey(key: string): void {
    if (this.config.legacyProductKeys.includes(key)) throw validationProblem({ productKey: `${key} is a legacy product key and is refused` });
    if (key !== this.config.PRODUCT_KEY_OWN && !this.config.internalProductKeys.includes(key)) {
      throw validationProblem({ productKey: `must be one of ${[this.config.PRODUCT_KEY_OWN, ...this.config.internalProductKeys].join(', ')}` });
    }
  }

  private async tenantOr404(tenantId: string): Promise<TenantEntity> {
    const t = await this.tenants.findById(tenantId);
    if (!t) throw new ProblemException(AdminProblems['tenant-not-found'], `No tenant ${tenantId}.`);
    return t;
  }
}
