import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { DATA_SOURCE, EntitlementEntity } from '@flagship/persistence';

/** Entitlements of one tenant (credits go through @flagship/ledger); every statement names the tenant. */
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
}
