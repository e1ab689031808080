import { Inject, Injectable, Logger } from '@nestjs/common';
import { BillingRepository, ensureStripeCustomer } from '@flagship/billing';
import { APP_CONFIG } from '@flagship/config';
import { TransactionRunner } from '@flagship/persistence';
import { BillingMetrics } from '../billing.metrics';
import type { BillingWorkerConfig } from '../env.schema';
import { StripeAccount } from '../stripe/stripe-account';
import { BillingSyncRepository } from '../webhooks/billing-sync.repository';
import { type UsageRow, UsageMeterRepository } from '@flagship/ledger';
import { METER_PAYLOAD_KEYS, UsagePricingService } from './usage-pricing.service';

/** Stripe takes meter events from the last 35 days; older rows are reported as of this margin inside it. */
const OLDEST_TIMESTAMP_S = 35 * 86400 - 3600;

/**
 * Reports billable gateway usage to Stripe meter events, exactly once per ledger row:
 * - rows are claimed `FOR UPDATE SKIP LOCKED` and held until the batch commits, so two replicas
 *   never send the same row at the same time;
 * - the row id is the event's `identifier`, so a row sent again after a crash (sent, not yet marked)
 *   is refused by Stripe as a duplicate, and that refusal counts as delivered;
 * - a row is marked only after Stripe accepted it; when Stripe fails mid-batch the accepted part is
 *   committed and the rest waits for the next run (the job backs off);
 * - events go only to a meter that exists, for customers subscribed to its metered price (each
 *   customer's usage subscription is made sure of before its first event), so they are invoiced.
 */
@Injectable()
export class UsageMeterService {
  private readonly log = new Logger(UsageMeterService.name);

  constructor(
    @Inject(TransactionRunner) private readonly transactions: Pick<TransactionRunner, 'run'>,
    private readonly stripe: StripeAccount,
    @Inject(APP_CONFIG) private readonly config: Pick<BillingWorkerConfig, 'METER_BATCH_SIZE' | 'METER_CONCURRENCY' | 'METER_EVENT_NAME'>,
    @Inject(UsageMeterRepository) private readonly rows: Pick<UsageMeterRepository, 'claim' | 'markReported'>,
    private readonly billing: BillingRepository,
    private readonly tenants: BillingSyncRepository,
    private readonly metrics: BillingMetrics,
    private readonly pricing: UsagePricingService,
  ) {}

  /** Reports one batch; answers how many rows were reported (0: nothing to do). Throws after committing what Stripe accepted. */
  async reportBatch(): Promise<number> {
    let failure: unknown;
    const reported = await this.transactions.run(async (m) => {
      const batch = await this.rows.claim(m, this.config.METER_BATCH_SIZE);
      if (batch.length === 0) return 0;
      // The meter and its price first: events sent before the meter exists would never be billed.
      await this.pricing.pricing();
      // Each tenant's customer and its usage subscription first, one after the other: the queries run
      // on this transaction's one connection, which takes one query at a time (the sends below run
      // concurrently). In a stable order, so two replicas' subscription locks never cross.
      const customers = new Map<string, string | undefined>();
      const owners = [...new Map(batch.map((r) => [`${r.tenantId}:${r.productKey}`, r])).entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      for (const [key, row] of owners) {
        const tenant = await this.tenants.tenant(row.tenantId, m);
        if (!tenant) {
          customers.set(key, undefined);
          continue;
        }
        const customer = await ensureStripeCustomer(this.stripe, this.billing, tenant, row.productKey);
        await this.pricing.ensureSubscription(m, customer);
        customers.set(key, customer.stripeCustomerId);
      }
      const accepted: UsageRow[] = [];
      const queue = [...batch];
      const send = async (row: UsageRow) => {
        const customer = customers.get(`${row.tenantId}:${row.productKey}`);
        if (!customer) return;
        const timestamp = Math.max(Math.floor((row.completedAt ?? row.createdAt).getTime() / 1000), Math.floor(Date.now() / 1000) - OLDEST_TIMESTAMP_S);
        const outcome = await this.stripe.sendMeterEvent({
          event_name: this.config.METER_EVENT_NAME,
          identifier: row.id,
          timestamp,
          payload: { [METER_PAYLOAD_KEYS.customer]: customer, [METER_PAYLOAD_KEYS.value]: String(row.debit), product_key: row.productKey },
        });
        this.metrics.meterEvents.inc({ outcome });
        accepted.push(row);
      };
      const workers = Array.from({ length: Math.max(1, this.config.METER_CONCURRENCY) }, async () => {
        while (failure === undefined) {
          const row = queue.shift();
          if (!row) return;
          try {
            await send(row);
          } catch (err) {
            failure ??= err;
          }
        }
      });
      await Promise.all(workers);
      await this.rows.markReported(m, accepted);
      return accepted.length;
    });
    if (failure !== undefined) {
      this.log.warn(`meter batch stopped after ${reported} rows`);
      throw failure;
    }
    return reported;
  }
}
