import { Inject, Injectable, Logger } from '@nestjs/common';
import type Stripe from 'stripe';
import { isStripeUnavailable } from '@flagship/billing';
import { TransactionRunner } from '@flagship/persistence';
import { CHANNELS, PUBSUB, type PubSub } from '@flagship/redis';
import { BillingMetrics } from '../billing.metrics';
import { BillingSyncService } from './billing-sync.service';
import { type StoredEvent, StripeEventsRepository } from './stripe-events.repository';

/** The event types billing-worker acts on (the catch-up lists these). */
export const HANDLED_EVENT_TYPES = [
  'checkout.session.completed',
  'checkout.session.async_payment_succeeded',
  'customer.subscription.created',
  'customer.subscription.updated',
  'customer.subscription.deleted',
  'customer.subscription.paused',
  'customer.subscription.resumed',
  'invoice.paid',
  'invoice.payment_succeeded',
  'invoice.payment_failed',
  // Refunds and disputes of credit purchases (at most 20 types: Stripe lists events of up to 20 at once).
  'charge.refunded',
  'charge.refund.updated',
  'refund.created',
  'refund.updated',
  'refund.failed',
  'charge.dispute.created',
  'charge.dispute.updated',
  'charge.dispute.closed',
] as const;

/** The charge a charge, refund or dispute event is about: the object itself (a Charge) or the charge it names. */
function chargeOf(type: string, object: Record<string, unknown>): string | null {
  const v = type === 'charge.refunded' ? object['id'] : object['charge'];
  const id = typeof v === 'string' ? v : v && typeof v === 'object' ? (v as { id?: unknown }).id : undefined;
  return typeof id === 'string' && /^[A-Za-z0-9_]{1,255}$/.test(id) ? id : null;
}

/**
 * Processes the webhook inbox one event per transaction: the event row is locked (other replicas
 * skip it), its effect written, and the row marked processed, all committed together; so an event
 * takes effect exactly once. A failure leaves the row for a later attempt; Stripe being down stops
 * the run (the job backs off) and nothing is lost.
 */
@Injectable()
export class StripeEventProcessor {
  private readonly log = new Logger(StripeEventProcessor.name);

  constructor(
    @Inject(TransactionRunner) private readonly transactions: Pick<TransactionRunner, 'run'>,
    @Inject(PUBSUB) private readonly pubsub: Pick<PubSub, 'publish'>,
    private readonly inbox: StripeEventsRepository,
    private readonly sync: BillingSyncService,
    private readonly metrics: BillingMetrics,
  ) {}

  /** Processes one due event; false when none is due. */
  async processNext(): Promise<boolean> {
    let claimed: StoredEvent | null = null;
    let tenants: string[] = [];
    try {
      claimed = await this.transactions.run(async (m) => {
        const ev = await this.inbox.claimNext(m);
        if (!ev) return null;
        tenants = await this.apply(m, ev);
        await this.inbox.markProcessed(m, ev.id);
        return ev;
      });
    } catch (err) {
      // The transaction rolled back; the row is ours no longer. Find which one failed from the error's context.
      const failed = (err as { stripeEventId?: string }).stripeEventId;
      if (failed) {
        this.metrics.events.inc({ type: (err as { stripeEventType?: string }).stripeEventType ?? 'unknown', outcome: 'failed' });
        const delay = isStripeUnavailable(err) ? 1000 : Math.min(3600_000, 5000 * 2 ** Math.min(10, ((err as { attempts?: number }).attempts ?? 0)));
        await this.inbox.recordFailure(failed, err instanceof Error ? err.message : String(err), delay).catch(() => undefined);
      }
      throw err;
    }
    if (!claimed) return false;
    this.metrics.events.inc({ type: claimed.type, outcome: 'processed' });
    for (const tenantId of new Set(tenants)) {
      // After commit, so the gateway re-reads what is now true.
      await this.pubsub.publish(CHANNELS.tenantChanged, { tenantId }).catch((err: unknown) => this.log.warn(`tenant-changed not published: ${String(err)}`));
    }
    return true;
  }

  private async apply(m: Parameters<BillingSyncService['syncSubscription']>[0], ev: StoredEvent): Promise<string[]> {
    try {
      const object = ev.payload.data.object;
      switch (ev.type) {
        case 'checkout.session.completed':
        case 'checkout.session.async_payment_succeeded':
          return await this.sync.checkoutCompleted(m, object as unknown as Stripe.Checkout.Session);
        case 'customer.subscription.created':
        case 'customer.subscription.updated':
        case 'customer.subscription.deleted':
        case 'customer.subscription.paused':
        case 'customer.subscription.resumed':
          return await this.sync.syncSubscription(m, object['id'] as string);
        case 'invoice.paid':
        case 'invoice.payment_succeeded':
          return await this.sync.invoice(m, object as unknown as Stripe.Invoice, 'invoice_paid');
        case 'invoice.payment_failed':
          return await this.sync.invoice(m, object as unknown as Stripe.Invoice, 'invoice_payment_failed');
        case 'charge.refunded':
        case 'charge.refund.updated':
        case 'refund.created':
        case 'refund.updated':
        case 'refund.failed':
        case 'charge.dispute.created':
        case 'charge.dispute.updated':
        case 'charge.dispute.closed': {
          const chargeId = chargeOf(ev.type, object);
          return chargeId ? await this.sync.chargeChanged(m, chargeId) : [];
        }
        default:
          return [];
      }
    } catch (err) {
      throw Object.assign(err instanceof Error ? err : new Error(String(err)), { stripeEventId: ev.id, stripeEventType: ev.type, attempts: ev.attempts });
    }
  }
}
