import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '@flagship/config';
import { type Budget, type BudgetKind, Budgets } from '@flagship/ledger';
import { TransactionRunner } from '@flagship/persistence';
import { ProblemException } from '@flagship/problem-details';
import { decodeCursor, type PageCursor } from '@flagship/service-kit';
import type { ManagementApiConfig } from '../env.schema';
import { OAuthClientsService } from '../oauth/oauth-clients.service';
import { OAuthClientProblems } from '../oauth/oauth-clients.errors';
import { Quotas } from '../quotas/quotas';
import { BudgetProblems } from './budgets.errors';

export interface BudgetView {
  kind: BudgetKind;
  id: string;
  monthlyCapMicroCredits: number;
  spentMicroCredits: number;
  reservedMicroCredits: number;
  month: string;
  createdAt: string;
  updatedAt: string;
}

const toView = (b: Budget): BudgetView => ({
  kind: b.kind,
  id: b.scopeId,
  monthlyCapMicroCredits: b.monthlyCap,
  spentMicroCredits: b.spent,
  reservedMicroCredits: b.reserved,
  month: b.month,
  createdAt: b.createdAt,
  updatedAt: b.updatedAt,
});

/** The cursor's id: `kind:scope id`, as budgetCursor writes it. */
const isBudgetKey = (id: string): boolean => /^(client|product):[\x21-\x7e]{1,64}$/.test(id);
export const budgetCursor = (b: BudgetView): PageCursor => ({ at: b.createdAt, id: `${b.kind}:${b.id}` });

/**
 * A tenant's monthly budgets per OAuth client and per product key (the gateway enforces them in its
 * reservation: libs/ledger). A client budget names a client of this tenant (another tenant's is 404,
 * as missing); a product budget names a product key the gateway knows. At most QUOTA_BUDGETS_PER_TENANT.
 */
@Injectable()
export class BudgetsService {
  private readonly productKeys: ReadonlySet<string>;

  constructor(
    private readonly budgets: Budgets,
    private readonly clients: OAuthClientsService,
    private readonly quotas: Quotas,
    @Inject(TransactionRunner) private readonly transactions: Pick<TransactionRunner, 'run'>,
    @Inject(APP_CONFIG) config: Pick<ManagementApiConfig, 'PRODUCT_KEY_OWN' | 'internalProductKeys'>,
  ) {
    this.productKeys = new Set([config.PRODUCT_KEY_OWN, ...config.internalProductKeys]);
  }

  /** Oldest first; one more than `limit` when another page exists (sendPage cuts it). */
  async list(tenantId: string, page: { limit: number; cursor?: string }): Promise<BudgetView[]> {
    const after = decodeCursor(page.cursor, isBudgetKey);
    const position = after && { at: after.at, kind: after.id.slice(0, after.id.indexOf(':')) as BudgetKind, scopeId: after.id.slice(after.id.indexOf(':') + 1) };
    return (await this.budgets.list(tenantId, { limit: page.limit + 1, after: position })).map(toView);
  }

  async set(tenantId: string, kind: BudgetKind, scopeId: string, monthlyCap: number): Promise<BudgetView> {
    await this.checkScope(tenantId, kind, scopeId);
    const budget = await this.transactions.run(async (m) => {
      // A new budget counts against the quota (under its lock, so concurrent PUTs cannot pass it); a changed cap does not.
      const exists = (await this.budgets.get(tenantId, kind, scopeId, m)) !== null;
      await this.quotas.reserve(m, 'budgets-per-tenant', tenantId, exists ? 0 : 1);
      return this.budgets.set(m, tenantId, kind, scopeId, monthlyCap);
    });
    return toView(budget);
  }

  async remove(tenantId: string, kind: BudgetKind, scopeId: string): Promise<void> {
    if (!(await this.budgets.remove(tenantId, kind, scopeId))) {
      throw new ProblemException(BudgetProblems['budget-not-found'], `This tenant has no budget for ${kind === 'client' ? 'the OAuth client' : 'the product key'} ${scopeId}.`);
    }
  }

  private async checkScope(tenantId: string, kind: BudgetKind, scopeId: string): Promise<void> {
    if (kind === 'client' && !(await this.clients.isActive(tenantId, scopeId))) {
      throw new ProblemException(OAuthClientProblems['oauth-client-not-found'], `No OAuth client ${scopeId} in this tenant.`);
    }
    if (kind === 'product' && !this.productKeys.has(scopeId)) {
      throw new ProblemException(BudgetProblems['product-key-not-found'], `The gateway knows no product key ${scopeId}.`);
    }
  }
}
