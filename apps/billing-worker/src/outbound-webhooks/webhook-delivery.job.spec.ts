import { Webhook } from 'standardwebhooks';
import { newWebhookSecret } from '@flagship/service-kit';
import type { ClaimedDelivery, Settlement } from './outbound-webhooks.repository';
import { WebhookDeliveryJob } from './webhook-delivery.job';
import type { SendOutcome } from './webhook-sender';

const NOW = new Date('2026-11-29T12:00:00.000Z');
const SETTINGS = { pollMs: 1000, batchSize: 2, leaseMs: 30_000, baseMs: 5_000, maxDelayMs: 3_600_000, windowMs: 86_400_000, retentionMs: 30 * 86_400_000 };

function setup(outcomes: SendOutcome[], secret = newWebhookSecret()) {
  const queue: ClaimedDelivery[] = [];
  const settled: Array<{ id: string; result: SendOutcome; settlement: Settlement; disableBefore: Date }> = [];
  const sent: Array<{ url: string; headers: Record<string, string>; body: string }> = [];
  const pruned: Date[] = [];
  const repo = {
    prune: async (before: Date) => {
      pruned.push(before);
      return 0;
    },
    claim: async (limit: number) => queue.splice(0, limit),
    settle: async (d: ClaimedDelivery, result: SendOutcome, settlement: Settlement, disableBefore: Date) => {
      settled.push({ id: d.id, result, settlement, disableBefore });
      return { disabled: false };
    },
  };
  const sender = {
    send: async (url: string, headers: Record<string, string>, body: string) => {
      sent.push({ url, headers, body });
      return outcomes.shift() ?? { outcome: 'delivered' as const, responseCode: 200, durationMs: 1, error: null };
    },
  };
  // The "sealed" form here is the secret itself: sealing is WebhookSecretBox's own spec.
  const box = { open: (sealed: string) => (sealed === 'broken' ? (() => { throw new Error('unsupported state or unable to authenticate data'); })() : sealed) };
  const job = new WebhookDeliveryJob(repo, sender, box, SETTINGS, () => NOW);
  const delivery = (over: Partial<ClaimedDelivery> = {}): ClaimedDelivery => ({
    id: `msg_${queue.length + 1}`,
    tenantId: 't',
    webhookId: 'w',
    url: 'https://hooks.example.com/x',
    secretSealed: secret,
    payload: { type: 'flag.updated', timestamp: NOW.toISOString(), data: { flagKey: 'k' } },
    attempt: 1,
    createdAt: NOW,
    ...over,
  });
  return { job, queue, settled, sent, delivery, secret, pruned };
}

describe('WebhookDeliveryJob', () => {
  it('signs each delivery so standardwebhooks verifies it, and says there is more when it filled a batch', async () => {
    const s = setup([]);
    s.queue.push(s.delivery(), s.delivery(), s.delivery());
    expect(await s.job.run()).toBe(true);
    expect(await s.job.run()).toBe(false);
    expect(s.sent).toHaveLength(3);
    for (const m of s.sent) {
      expect(m.headers['webhook-timestamp']).toBe(String(NOW.getTime() / 1000));
      // standardwebhooks refuses a timestamp five minutes off its clock: verify at NOW's.
      jest.useFakeTimers({ now: NOW });
      try {
        expect(new Webhook(s.secret).verify(m.body, m.headers)).toEqual({ type: 'flag.updated', timestamp: NOW.toISOString(), data: { flagKey: 'k' } });
      } finally {
        jest.useRealTimers();
      }
    }
    expect(s.settled.map((x) => x.settlement)).toEqual([{ status: 'delivered' }, { status: 'delivered' }, { status: 'delivered' }]);
    // The log is pruned once an hour, of what is older than the retention.
    expect(s.pruned).toEqual([new Date(NOW.getTime() - SETTINGS.retentionMs)]);
  });

  it('retries a failure with backoff, gives up past the window, and passes the window start for disabling', async () => {
    const failed: SendOutcome = { outcome: 'failed', responseCode: 500, durationMs: 3, error: 'HTTP 500' };
    const s = setup([failed, failed]);
    s.queue.push(s.delivery({ attempt: 3 }), s.delivery({ createdAt: new Date(NOW.getTime() - 86_399_000) }));
    await s.job.run();
    const [retried, givenUp] = s.settled;
    expect(retried!.settlement.status).toBe('pending');
    const wait = (retried!.settlement as { retryAt: Date }).retryAt.getTime() - NOW.getTime();
    expect(wait).toBeGreaterThanOrEqual(20_000);
    expect(wait).toBeLessThanOrEqual(22_000);
    expect(givenUp!.settlement).toEqual({ status: 'failed' });
    expect(retried!.disableBefore).toEqual(new Date(NOW.getTime() - SETTINGS.windowMs));
  });

  it('logs a secret that no longer opens as a failed attempt, sending nothing', async () => {
    const s = setup([]);
    s.queue.push(s.delivery({ secretSealed: 'broken' }));
    await s.job.run();
    expect(s.sent).toEqual([]);
    expect(s.settled[0]!.result).toMatchObject({ outcome: 'failed', responseCode: null, error: expect.stringContaining('not sent') });
    expect(s.settled[0]!.settlement.status).toBe('pending');
  });
});
