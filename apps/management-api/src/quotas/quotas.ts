import { Global, Inject, Injectable, Module } from '@nestjs/common';
import { APP_CONFIG } from '@flagship/config';
import { BudgetsRepository } from '@flagship/ledger';
import { TransactionRunner, type Tx } from '@flagship/persistence';
import { ProblemException } from '@flagship/problem-details';
import type { ManagementApiConfig } from '../env.schema';
import { QuotaProblems } from './quotas.errors';
import { QuotasRepository } from './quotas.repository';

export type QuotaName =
  | 'flags-per-tenant'
  | 'flag-bytes-per-tenant'
  | 'segments-per-tenant'
  | 'segment-bytes-per-tenant'
  | 'environments-per-tenant'
  | 'oauth-clients-per-tenant'
  | 'webhooks-per-tenant'
  | 'tenants-per-user'
  | 'budgets-per-tenant'
  | 'gateway-bindings-per-tenant'
  | 'invitations-per-tenant';

/** The settings Quotas reads (QUOTA_*). */
export type QuotaSettings = Pick<
  ManagementApiConfig,
  | 'QUOTA_FLAGS_PER_TENANT'
  | 'QUOTA_FLAG_BYTES_PER_TENANT'
  | 'QUOTA_SEGMENTS_PER_TENANT'
  | 'QUOTA_SEGMENT_BYTES_PER_TENANT'
  | 'QUOTA_ENVIRONMENTS_PER_TENANT'
  | 'QUOTA_OAUTH_CLIENTS_PER_TENANT'
  | 'QUOTA_WEBHOOKS_PER_TENANT'
  | 'QUOTA_TENANTS_PER_USER'
  | 'QUOTA_BUDGETS_PER_TENANT'
  | 'QUOTA_GATEWAY_BINDINGS_PER_TENANT'
  | 'QUOTA_INVITATIONS_PER_TENANT'
>;

/** The refusal's detail: what there is, the limit, and that the request would pass it. */
const DETAIL: Record<QuotaName, (current: number, limit: number, adding: number) => string> = {
  'flags-per-tenant': (c, l, a) => `This tenant has ${c} of its ${l} flags; ${a} more would pass the limit. Delete flags first.`,
  'flag-bytes-per-tenant': (c, l, a) =>
    `This tenant's flag definitions take ${c} of its ${l} bytes (each environment's definition counts); this change would add ${a}. Make flags smaller or delete some first.`,
  'segments-per-tenant': (c, l, a) => `This tenant has ${c} of its ${l} segments (every environment's counted); ${a} more would pass the limit. Delete segments first.`,
  'segment-bytes-per-tenant': (c, l, a) => `This tenant's segment definitions take ${c} of its ${l} bytes; this change would add ${a}. Make segments smaller or delete some first.`,
  'environments-per-tenant': (c, l) => `This tenant has ${c} of its ${l} environments.`,
  'oauth-clients-per-tenant': (c, l) => `This tenant has ${c} of its ${l} OAuth clients; delete one first.`,
  'webhooks-per-tenant': (c, l) => `This tenant has ${c} of its ${l} webhooks; delete one first.`,
  'tenants-per-user': (c, l) => `You have created ${c} tenants; a user may create at most ${l} (stepping down from admin in one does not free a place).`,
  'budgets-per-tenant': (c, l) => `This tenant has ${c} of its ${l} budgets; delete one first.`,
  'gateway-bindings-per-tenant': (c, l) => `This tenant has bound ${c} of its ${l} gateway routes to flags; unbind one first.`,
  'invitations-per-tenant': (c, l) => `This tenant has ${c} of its ${l} pending invitations; withdraw one, or wait for answers, first.`,
};

/**
 * Limits per tenant and per user (QUOTA_* settings). A write that adds to a quota calls `reserve`
 * inside its own transaction, before it inserts: concurrent writers of one owner queue on a lock
 * and each counts what the previous ones committed, so together they never pass the limit.
 */
@Injectable()
export class Quotas {
  private readonly limits: Record<QuotaName, number>;

  constructor(
    @Inject(APP_CONFIG) config: QuotaSettings,
    private readonly repo: QuotasRepository,
    @Inject(TransactionRunner) private readonly transactions: Pick<TransactionRunner, 'run'>,
  ) {
    this.limits = {
      'flags-per-tenant': config.QUOTA_FLAGS_PER_TENANT,
      'flag-bytes-per-tenant': config.QUOTA_FLAG_BYTES_PER_TENANT,
      'segments-per-tenant': config.QUOTA_SEGMENTS_PER_TENANT,
      'segment-bytes-per-tenant': config.QUOTA_SEGMENT_BYTES_PER_TENANT,
      'environments-per-tenant': config.QUOTA_ENVIRONMENTS_PER_TENANT,
      'oauth-clients-per-tenant': config.QUOTA_OAUTH_CLIENTS_PER_TENANT,
      'webhooks-per-tenant': config.QUOTA_WEBHOOKS_PER_TENANT,
      'tenants-per-user': config.QUOTA_TENANTS_PER_USER,
      'budgets-per-tenant': config.QUOTA_BUDGETS_PER_TENANT,
      'gateway-bindings-per-tenant': config.QUOTA_GATEWAY_BINDINGS_PER_TENANT,
      'invitations-per-tenant': config.QUOTA_INVITATIONS_PER_TENANT,
    };
  }

  limit(quota: QuotaName): number {
    return this.limits[quota];
  }

  /**
   * 409 quota-exceeded (naming quota, limit and current count) unless `adding` more fit; holds the
   * owner's turn until `m` ends. `written`: `adding` is already written in `m` (flag bytes are
   * measured once the write is made), so the count includes it. `adds`: what the refusal names as
   * adding most (the flags of an import), told as they are.
   */
  async reserve(m: Tx, quota: QuotaName, ownerId: string, adding = 1, opts: { written?: boolean; adds?: Record<string, number> } = {}): Promise<void> {
    if (adding <= 0) return;
    const limit = this.limits[quota];
    const current = (await this.repo.lockAndCount(m, quota, ownerId)) - (opts.written ? adding : 0);
    if (current + adding <= limit) return;
    throw new ProblemException(QuotaProblems['quota-exceeded'], DETAIL[quota](current, limit, adding), {
      quota,
      limit,
      current,
      ...(opts.adds !== undefined ? { adds: opts.adds } : {}),
    });
  }

  /** `work` in a transaction of its own, after `reserve` (for writes that are not in one already). */
  within<T>(quota: QuotaName, ownerId: string, work: (m: Tx) => Promise<T>): Promise<T> {
    return this.transactions.run(async (m) => {
      await this.reserve(m, quota, ownerId);
      return work(m);
    });
  }
}

/** Global: every feature that creates something counted may inject Quotas. */
@Global()
@Module({ providers: [Quotas, QuotasRepository, BudgetsRepository], exports: [Quotas] })
export class QuotasModule {}
