import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { DATA_SOURCE, type Tx } from '@flagship/persistence';

/** A tenant's micro-credits: `reserved` is held by gateway requests in flight. */
export interface CreditBalance {
  balance: number;
  reserved: number;
}

/** Who granted credits: an admin's caller id, `seed`, or `stripe` for a purchase. */
export interface CreditGrant {
  amount: number;
  reason: string;
  grantedBy: string;
}

/**
 * A tenant's balance as management-api's rules read it, and the grants that fill it (the port:
 * CreditsRepository on Postgres, an in-memory twin in the services' unit specs).
 */
export abstract class CreditBalances {
  /** Null when the tenant was never granted credits. */
  abstract balanceOf(tenantId: string): Promise<CreditBalance | null>;
  /** Adds the grant (negative takes back), in the caller's transaction; re-arms a low-balance alert the new balance is above. */
  abstract grantCredits(m: Tx, tenantId: string, grant: CreditGrant): Promise<CreditBalance>;
}

/** A tenant's credit balance and the grants that fill it; every statement names the tenant. */
@Injectable()
export class CreditsRepository extends CreditBalances {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {
    super();
  }

  /** Null when the tenant was never granted credits. */
  async balanceOf(tenantId: string): Promise<CreditBalance | null> {
    const rows: Array<{ balance: string; reserved: string }> = await this.ds.query(
      'SELECT balance::text AS balance, reserved::text AS reserved FROM credit_balances WHERE tenant_id = $1',
      [tenantId],
    );
    return rows[0] ? { balance: Number(rows[0].balance), reserved: Number(rows[0].reserved) } : null;
  }

  /**
   * Records the grant and adds it to the balance, in the caller's transaction; answers the new balance.
   * A low-balance alert the new balance is above is re-armed, so the next fall below it is recorded.
   */
  async grantCredits(m: Tx, tenantId: string, grant: CreditGrant): Promise<CreditBalance> {
    await m.query(`INSERT INTO credit_grants (tenant_id, amount, reason, granted_by) VALUES ($1, $2, $3, $4)`, [tenantId, grant.amount, grant.reason, grant.grantedBy]);
    const rows: Array<{ balance: string; reserved: string }> = await m.query(
      `WITH b AS (
         INSERT INTO credit_balances (tenant_id, balance) VALUES ($1, $2)
         ON CONFLICT (tenant_id) DO UPDATE SET balance = credit_balances.balance + EXCLUDED.balance, updated_at = now()
         RETURNING balance, reserved
       ),
       rearmed AS (
         UPDATE low_balance_alerts a SET armed = true, updated_at = now()
           FROM b WHERE a.tenant_id = $1 AND NOT a.armed AND b.balance > a.threshold
       )
       SELECT balance::text AS balance, reserved::text AS reserved FROM b`,
      [tenantId, grant.amount],
    );
    return { balance: Number(rows[0]!.balance), reserved: Number(rows[0]!.reserved) };
  }

  /** Whether the tenant was ever granted credits for `reason` (the demo seed grants once). */
  async hasGrant(m: Tx, tenantId: string, reason: string): Promise<boolean> {
    const rows: unknown[] = await m.query(`SELECT 1 FROM credit_grants WHERE tenant_id = $1 AND reason = $2 LIMIT 1`, [tenantId, reason]);
    return rows.length > 0;
  }
}
