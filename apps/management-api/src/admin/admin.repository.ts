import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { CreditBalanceEntity, DATA_SOURCE, EntitlementEntity, type Tx } from '@flagship/persistence';

/** Money and entitlements of one tenant; every statement names the tenant. */
@Injectable()
export class AdminRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {}

  async upsertEntitlement(tenantId: string, productKey: string, tier: string, validUntil: Date | null): Promise<EntitlementEntity> {
    await this.ds.query(
      `INSERT INTO entitlements (tenant_id, product_key, tier, valid_until, source) VALUES ($1, $2, $3, $4, 'admin')
       ON CONFLICT (tenant_id, product_key) DO UPDATE SET tier = EXCLUDED.tier, valid_until = EXCLUDED.valid_until, source = 'admin', updated_at = now()`,
      [tenantId, productKey, tier, validUntil],
    );
    return (await this.ds.getRepository(EntitlementEntity).findOneBy({ tenantId, productKey }))!;
  }

  /** Records the grant and moves the balance in the caller's transaction. */
  async grantCredits(m: Tx, tenantId: string, amount: number, reason: string, grantedBy: string): Promise<CreditBalanceEntity> {
    await m.query(`INSERT INTO credit_grants (tenant_id, amount, reason, granted_by) VALUES ($1, $2, $3, $4)`, [tenantId, amount, reason, grantedBy]);
    await m.query(
      `INSERT INTO credit_balances (tenant_id, balance) VALUES ($1, $2)
       ON CONFLICT (tenant_id) DO UPDATE SET balance = credit_balances.balance + EXCLUDED.balance, updated_at = now()`,
      [tenantId, amount],
    );
    return (await m.getRepository(CreditBalanceEntity).findOneBy({ tenantId }))!;
  }
}
