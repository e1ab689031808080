import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { DATA_SOURCE } from '@flagship/persistence';

export interface CreditBalanceRow {
  balance: string;
  reserved: string;
}

/** A tenant's credit balance; every statement names the tenant. */
@Injectable()
export class CreditsRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {}

  async balanceOf(tenantId: string): Promise<CreditBalanceRow | null> {
    const rows: CreditBalanceRow[] = await this.ds.query('SELECT balance::text AS balance, reserved::text AS reserved FROM credit_balances WHERE tenant_id = $1', [tenantId]);
    return rows[0] ?? null;
  }
}
