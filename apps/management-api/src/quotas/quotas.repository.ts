import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { BudgetsRepository } from '@flagship/ledger';
import type { QuotaName } from './quotas';

/**
 * What each quota counts, for one tenant (or, for tenants-per-user, one user: the tenants they
 * created, so stepping down from admin, or handing a tenant to someone else, frees no place).
 */
const COUNTS: Record<Exclude<QuotaName, 'budgets-per-tenant'>, string> = {
  'flags-per-tenant': 'SELECT count(*)::int AS n FROM flags WHERE tenant_id = $1',
  // Every environment's copy: each is held apart by the evaluators (measureFlagDefinitions stores it).
  'flag-bytes-per-tenant': 'SELECT coalesce(sum(definition_bytes), 0)::float8 AS n FROM flag_environments WHERE tenant_id = $1',
  'segments-per-tenant': 'SELECT count(*)::int AS n FROM segments WHERE tenant_id = $1',
  'segment-bytes-per-tenant': 'SELECT coalesce(sum(definition_bytes), 0)::float8 AS n FROM segments WHERE tenant_id = $1',
  'environments-per-tenant': 'SELECT count(*)::int AS n FROM environments WHERE tenant_id = $1',
  'oauth-clients-per-tenant': 'SELECT count(*)::int AS n FROM oauth_clients WHERE tenant_id = $1 AND deleted_at IS NULL',
  'webhooks-per-tenant': 'SELECT count(*)::int AS n FROM webhooks WHERE tenant_id = $1',
  'gateway-bindings-per-tenant': 'SELECT count(*)::int AS n FROM gateway_bindings WHERE tenant_id = $1',
  'tenants-per-user': 'SELECT count(*)::int AS n FROM tenants WHERE created_by = $1',
  // Expired ones are purged by the invite that counts; they never count.
  'invitations-per-tenant': `SELECT count(*)::int AS n FROM invitations WHERE tenant_id = $1 AND status = 'pending' AND expires_at > now()`,
};

@Injectable()
export class QuotasRepository {
  /** The ledger owns every statement on the budget tables, this count included. */
  constructor(private readonly budgets: BudgetsRepository) {}

  /**
   * Waits for this owner's turn on this quota (a transaction-scoped advisory lock, so writers that
   * add to it queue until the one before has committed), then counts what it has.
   */
  async lockAndCount(m: EntityManager, quota: QuotaName, ownerId: string): Promise<number> {
    await m.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`quota:${quota}:${ownerId}`]);
    if (quota === 'budgets-per-tenant') return this.budgets.count(m, ownerId);
    const [row] = (await m.query(COUNTS[quota], [ownerId])) as Array<{ n: number }>;
    return row?.n ?? 0;
  }
}
