import { Inject, Injectable, Logger } from '@nestjs/common';
import { BILLING_STATE, BillingRepository, type StripeApi } from '@flagship/billing';
import { APP_CONFIG } from '@flagship/config';
import type { BillingWorkerConfig } from '../env.schema';
import { HANDLED_EVENT_TYPES } from '../webhooks/stripe-event.processor';
import { StripeEventsRepository } from '../webhooks/stripe-events.repository';
import { STRIPE_API } from './stripe.tokens';

/** Events of the same second may be listed after the watermark moved past them: look back this far. */
const OVERLAP_S = 300;

/**
 * After downtime (ours, or a webhook endpoint Stripe could not reach), lists the recent events of
 * the types we handle and stores the missing ones in the inbox, where they are processed like a
 * delivery. The inbox's key on the event id makes an event listed again harmless.
 */
@Injectable()
export class StripeEventsCatchUpService {
  private readonly log = new Logger(StripeEventsCatchUpService.name);

  constructor(
    @Inject(STRIPE_API) private readonly stripe: StripeApi,
    @Inject(APP_CONFIG) private readonly config: BillingWorkerConfig,
    private readonly billing: BillingRepository,
    private readonly inbox: StripeEventsRepository,
  ) {}

  /** Answers how many events were new. */
  async catchUp(): Promise<number> {
    const stored = await this.billing.state(BILLING_STATE.eventsWatermark);
    const since = stored ? Number(stored) - OVERLAP_S : Math.floor(Date.now() / 1000) - this.config.STRIPE_CATCH_UP_WINDOW_S;
    let newest = stored ? Number(stored) : since;
    let fresh = 0;
    // Auto-pagination walks every page, newest first.
    for await (const event of this.stripe.client().events.list({ created: { gte: since }, types: [...HANDLED_EVENT_TYPES], limit: 100 })) {
      if (await this.inbox.store(event, 'catch_up')) fresh++;
      newest = Math.max(newest, event.created);
    }
    await this.billing.setState(BILLING_STATE.eventsWatermark, String(newest));
    if (fresh > 0) this.log.log(`caught up on ${fresh} Stripe events missed by webhooks`);
    return fresh;
  }
}
