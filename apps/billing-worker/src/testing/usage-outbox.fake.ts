import { randomUUID } from 'node:crypto';
import type { UsageMeterRepository, UsageRow } from '@flagship/ledger';
import type { Tx } from '@flagship/persistence';

/** What the meter asks of the usage ledger (libs/ledger's UsageMeterRepository). */
export type UsageOutbox = Pick<UsageMeterRepository, 'claim' | 'markReported'>;

/**
 * The usage ledger as the meter's outbox, in memory, for UsageMeterService's unit spec;
 * usage-outbox.int-spec.ts runs the same cases on it and on UsageMeterRepository over Postgres.
 * Nothing is locked: a unit test runs one batch at a time.
 */
export class FakeUsageOutbox implements UsageOutbox {
  readonly rows: Array<UsageRow & { meterReportedAt: Date | null }> = [];

  /** A ledger row as the gateway leaves it: succeeded, billable, completed a minute ago unless told otherwise. */
  add(row: Partial<UsageRow> & Pick<UsageRow, 'tenantId'>): UsageRow {
    const completedAt = row.completedAt === undefined ? new Date(Date.now() - 60_000) : row.completedAt;
    const full: UsageRow = {
      id: randomUUID(),
      clientId: 'client-1',
      productKey: 'core',
      provider: 'inhouse',
      requestedProvider: null,
      model: 'm-1',
      endpoint: 'chat.completions',
      stream: false,
      status: 'succeeded',
      reserved: 0,
      debit: 100,
      zeroRated: false,
      zeroRatedReason: null,
      inputTokens: 10,
      outputTokens: 20,
      cachedTokens: 0,
      inputPer1k: null,
      outputPer1k: null,
      cachedInputPer1k: null,
      usageEstimated: false,
      overrun: false,
      errorCode: null,
      latencyMs: null,
      requestId: null,
      clientRequestId: null,
      createdAt: completedAt ?? new Date(),
      ...row,
      completedAt,
    };
    this.rows.push({ ...full, meterReportedAt: null });
    return full;
  }

  async claim(_m: Tx, limit: number): Promise<UsageRow[]> {
    const at = (r: UsageRow) => r.completedAt?.getTime() ?? Infinity;
    return this.rows
      .filter((r) => (r.status === 'succeeded' || r.status === 'abandoned') && !r.zeroRated && r.debit > 0 && r.meterReportedAt === null)
      .sort((a, b) => at(a) - at(b))
      .slice(0, limit)
      .map(({ meterReportedAt: _, ...r }) => ({ ...r }));
  }

  async markReported(_m: Tx, rows: ReadonlyArray<Pick<UsageRow, 'id' | 'tenantId'>>): Promise<void> {
    const now = new Date();
    for (const { id, tenantId } of rows) {
      const held = this.rows.find((r) => r.id === id && r.tenantId === tenantId && r.meterReportedAt === null);
      if (held) held.meterReportedAt = now;
    }
  }

  /** Ids of the rows marked reported. */
  reported(): string[] {
    return this.rows.filter((r) => r.meterReportedAt !== null).map((r) => r.id);
  }
}
