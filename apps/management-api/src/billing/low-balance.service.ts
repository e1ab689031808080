import { Injectable } from '@nestjs/common';
import { CreditBalances, LowBalanceAlerts } from '@flagship/ledger';
import { decodeCursor, type PageCursor } from '@flagship/service-kit';

export interface LowBalanceAlertView {
  threshold: number | null;
  armed: boolean;
  below: boolean;
  balance: number;
}

export interface LowBalanceCrossingView {
  id: string;
  threshold: number;
  balance: number;
  crossedAt: string;
}

export const crossingCursor = (c: LowBalanceCrossingView): PageCursor => ({ at: c.crossedAt, id: c.id });

/** A tenant's low-balance threshold and the crossings recorded under it (the gateway's settlements record them). */
@Injectable()
export class LowBalanceService {
  constructor(
    private readonly alerts: LowBalanceAlerts,
    private readonly credits: CreditBalances,
  ) {}

  async get(tenantId: string): Promise<LowBalanceAlertView> {
    const [alert, bal] = await Promise.all([this.alerts.get(tenantId), this.credits.balanceOf(tenantId)]);
    const balance = bal?.balance ?? 0;
    return { threshold: alert?.threshold ?? null, armed: alert?.armed ?? false, below: alert !== null && balance <= alert.threshold, balance };
  }

  async set(tenantId: string, threshold: number): Promise<LowBalanceAlertView> {
    await this.alerts.set(tenantId, threshold);
    return this.get(tenantId);
  }

  async remove(tenantId: string): Promise<void> {
    await this.alerts.remove(tenantId);
  }

  /** Newest first; one more than `limit` when another page exists (sendPage cuts it). */
  async crossings(tenantId: string, page: { limit: number; cursor?: string }): Promise<LowBalanceCrossingView[]> {
    const after = decodeCursor(page.cursor);
    const rows = await this.alerts.crossings(tenantId, { limit: page.limit + 1, after });
    return rows.map((c) => ({ id: c.id, threshold: c.threshold, balance: c.balance, crossedAt: c.crossedAt }));
  }
}
