import { inlineTransactions } from '../testing/inline-transactions';
import { ProblemException } from '@flagship/problem-details';
import { signWebhook, WebhookSecretBox } from '@flagship/service-kit';
import { Quotas, type QuotaSettings } from '../quotas/quotas';
import { FakeQuotasRepository } from '../quotas/quotas.repository.fake';
import { DomainEvents } from './domain-events';
import { FakeWebhooksRepository } from './webhooks.repository.fake';
import { type WebhookSettings, WebhooksService } from './webhooks.service';
import { webhookUrlProblem } from './webhook-url';

const KEY = Buffer.alloc(32, 7).toString('base64');
const A = '00000000-0000-4000-8000-00000000000a';
const B = '00000000-0000-4000-8000-00000000000b';

function setup(settings: Partial<WebhookSettings> = {}, quota = 3) {
  const repo = new FakeWebhooksRepository();
  const quotas = new Quotas({ QUOTA_WEBHOOKS_PER_TENANT: quota } as QuotaSettings, new FakeQuotasRepository({ 'webhooks-per-tenant': (t) => [...repo.webhooks.values()].filter((w) => w.tenantId === t).length }), inlineTransactions);
  const service = new WebhooksService(inlineTransactions, repo, quotas, { WEBHOOKS_ALLOW_PRIVATE_URLS: false, WEBHOOK_SECRETS_KEY: KEY, ...settings });
  return { repo, service, events: new DomainEvents(repo) };
}

const problemOf = async (p: Promise<unknown>) => {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(ProblemException);
  return { ...((err as ProblemException).getResponse() as { status: number; type: string }), ...(err as ProblemException).extensions };
};

describe('webhookUrlProblem', () => {
  it.each(['https://hooks.example.com/x', 'https://1.1.1.1/x', 'https://[2606:4700::1111]/x', 'https://hooks.example.com:8443/x'])('accepts %s', (url) => {
    expect(webhookUrlProblem(url, false)).toBeUndefined();
  });
  it.each([
    ['http://hooks.example.com/x', 'https'],
    ['https://127.0.0.1/x', 'loopback'],
    ['https://0x7f.1/x', 'loopback'],
    ['https://10.1.2.3/x', 'private'],
    ['https://169.254.169.254/latest', 'reserved'],
    ['https://100.64.0.1/x', 'private'],
    ['https://[::ffff:127.0.0.1]/x', 'loopback'],
    ['https://[fd00::1]/x', 'private'],
    ['https://localhost/x', 'public host'],
    ['https://intranet/x', 'public host'],
    ['https://u:p@hooks.example.com/x', 'credentials'],
    ['not a url', 'absolute'],
    [`https://example.com/${'a'.repeat(2048)}`, 'at most'],
  ])('refuses %s in production (%s)', (url, why) => {
    expect(webhookUrlProblem(url, false)).toContain(why);
  });
  it('lets http and loopback through only with the development setting', () => {
    expect(webhookUrlProblem('http://127.0.0.1:4000/hook', true)).toBeUndefined();
    expect(webhookUrlProblem('ftp://127.0.0.1/hook', true)).toContain('https');
  });
});

describe('WebhooksService', () => {
  it('creates a webhook with a whsec_ secret shown once and kept only sealed', async () => {
    const { repo, service } = setup();
    const created = await service.create(A, 'u1', { url: 'https://hooks.example.com/a', events: ['flag.updated', 'flag.created', 'flag.updated'] });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(created.secret.slice(6), 'base64')).toHaveLength(32);
    expect(created.events).toEqual(['flag.created', 'flag.updated']);
    const stored = repo.webhooks.get(created.id)!;
    expect(stored.secretSealed).not.toContain(created.secret.slice(6));
    expect(new WebhookSecretBox(KEY).open(stored.secretSealed)).toBe(created.secret);
    expect(JSON.stringify(await service.list(A, { limit: 10 }))).not.toContain('whsec_');
  });

  it('refuses a private URL at write with a 422 naming url, unless the development setting allows it', async () => {
    const problem = await problemOf(setup().service.create(A, null, { url: 'https://192.168.1.10/hook', events: ['flag.updated'] }));
    expect(problem.status).toBe(422);
    expect(JSON.stringify(problem)).toMatch(/"url":"names a loopback, private or reserved address"/);
    await expect(setup({ WEBHOOKS_ALLOW_PRIVATE_URLS: true }).service.create(A, null, { url: 'http://127.0.0.1:9/hook', events: ['flag.updated'] })).resolves.toBeDefined();
  });

  it('answers 503 webhooks-unavailable when the server has no WEBHOOK_SECRETS_KEY', async () => {
    const problem = await problemOf(setup({ WEBHOOK_SECRETS_KEY: '' }).service.create(A, null, { url: 'https://hooks.example.com/a', events: ['flag.updated'] }));
    expect([problem.status, problem.type]).toEqual([503, '/problems/webhooks-unavailable']);
  });

  it('holds a tenant to its quota of webhooks, and only its own count', async () => {
    const { service } = setup({}, 2);
    for (let i = 0; i < 2; i++) await service.create(A, null, { url: `https://hooks.example.com/${i}`, events: ['flag.updated'] });
    expect((await problemOf(service.create(A, null, { url: 'https://hooks.example.com/3', events: ['flag.updated'] }))).status).toBe(409);
    await expect(service.create(B, null, { url: 'https://hooks.example.com/b', events: ['flag.updated'] })).resolves.toBeDefined();
  });

  it('fans an event out to the subscribed, enabled webhooks of its tenant only', async () => {
    const { repo, service, events } = setup();
    const flags = await service.create(A, null, { url: 'https://hooks.example.com/f', events: ['flag.updated'] });
    const segments = await service.create(A, null, { url: 'https://hooks.example.com/s', events: ['segment.updated'] });
    const other = await service.create(B, null, { url: 'https://hooks.example.com/b', events: ['flag.updated'] });
    await events.record({} as never, A, { type: 'flag.updated', data: { flagKey: 'k' } });
    expect(repo.outbox.map((d) => d.webhookId)).toEqual([flags.id]);
    expect(repo.outbox[0]!.payload).toMatchObject({ type: 'flag.updated', data: { flagKey: 'k' } });
    expect(await service.deliveries(A, segments.id, { limit: 10 })).toEqual([]);
    expect(await service.deliveries(B, other.id, { limit: 10 })).toEqual([]);
    repo.disable(flags.id);
    await events.record({} as never, A, { type: 'flag.updated', data: { flagKey: 'k' } });
    expect(repo.outbox).toHaveLength(1);
  });

  it("answers 404 for another tenant's webhook, and replays only an enabled webhook's own delivery", async () => {
    const { repo, service, events } = setup();
    const w = await service.create(A, null, { url: 'https://hooks.example.com/f', events: ['flag.deleted'] });
    await events.record({} as never, A, { type: 'flag.deleted', data: { flagKey: 'k' } });
    const [delivery] = await service.deliveries(A, w.id, { limit: 10 });
    expect((await problemOf(service.deliveries(B, w.id, { limit: 10 }))).status).toBe(404);
    expect((await problemOf(service.replay(B, w.id, delivery!.id))).status).toBe(404);
    expect((await problemOf(service.remove(B, w.id))).status).toBe(404);
    expect((await problemOf(service.replay(A, w.id, A))).type).toContain('webhook-delivery-not-found');
    repo.outbox[0]!.status = 'failed';
    await service.replay(A, w.id, delivery!.id);
    expect(repo.outbox[0]!.status).toBe('pending');
    repo.disable(w.id);
    expect((await problemOf(service.replay(A, w.id, delivery!.id))).status).toBe(409);
    await service.remove(A, w.id);
    expect(await service.list(A, { limit: 10 })).toEqual([]);
  });
});

describe('signWebhook', () => {
  it('signs "id.timestamp.body" with the decoded secret (Standard Webhooks test vector)', () => {
    // The specification's published example.
    const signature = signWebhook('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}');
    expect(signature).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });
});
