/**
 * Outbound webhooks end to end with the BUILT apps as processes (`npx nx run-many -t build -p
 * management-api,billing-worker` first), driven by the SDK: a tenant admin creates a webhook, a flag
 * change commits its event with it, billing-worker delivers it to a receiver on loopback (the
 * development setting allows it) that verifies every delivery with the `standardwebhooks` library,
 * answers 500 once, gets the retry, and gets a replay from the delivery log, same webhook-id each time.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { FlagshipClient } from '@flagship/sdk';
import { type BuiltProcess, createTestEnvironment, http, startBuiltProcess, type TestEnvironment, waitFor } from '@flagship/testing';

const DIST = join(__dirname, '../../../dist/apps');
const API_JS = join(DIST, 'management-api/apps/management-api/src/main.js');
const WORKER_JS = join(DIST, 'billing-worker/apps/billing-worker/src/main.js');

jest.setTimeout(60_000);

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  /** What standardwebhooks' verify returned, or its error. */
  verified: unknown;
  status: number;
}

describe('outbound webhooks: built management-api and billing-worker, a verifying receiver', () => {
  let te: TestEnvironment;
  let api: BuiltProcess;
  let worker: BuiltProcess;
  let receiver: Server;
  let receiverUrl: string;
  let admin: FlagshipClient;
  let secret = '';
  const received: Received[] = [];
  /** The statuses the receiver answers, in turn; 200 once they run out. */
  const script: number[] = [];

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        let verified: unknown;
        try {
          verified = new Webhook(secret).verify(body, req.headers as Record<string, string>);
        } catch (err) {
          verified = err;
        }
        const status = script.shift() ?? 200;
        received.push({ headers: req.headers, body, verified, status });
        res.statusCode = status;
        res.end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/flagship`;
    te = await createTestEnvironment({ IDP_MODE: 'dev', WEBHOOKS_ALLOW_PRIVATE_URLS: 'true', WEBHOOK_POLL_MS: '100', WEBHOOK_RETRY_BASE_MS: '300', HOST: '127.0.0.1' });
    api = await startBuiltProcess(API_JS, te.env);
    worker = await startBuiltProcess(WORKER_JS, te.env);
    const email = `owner-${Date.now()}@flagship.test`;
    // The dev identity provider signs at the address management-api was told is its own.
    const idToken = (await http<{ idToken: string }>(`${api.url}/dev/idp/accounts`, { method: 'POST', json: { email, password: 'correct-horse-1' } })).body.idToken;
    const signup = await http<{ data: { canonical_tenant_id: string } }>(`${api.url}/api/v1/auth/signup`, { method: 'POST', json: { idToken, email, password: 'correct-horse-1' } });
    admin = new FlagshipClient({ baseUrl: api.url, tenantId: signup.body.data.canonical_tenant_id, auth: { idToken }, maxRetries: 0 });
  }, 90_000);

  afterAll(async () => {
    for (const p of [api, worker]) {
      if (p && p.child.exitCode === null) {
        p.child.kill('SIGTERM');
        await new Promise((r) => p.child.once('exit', r));
      }
    }
    receiver?.closeAllConnections();
    await new Promise((r) => receiver?.close(r));
    await te?.teardown();
  });

  it('delivers a flag change signed as Standard Webhooks, retries after a 500, logs each attempt and replays from the log', async () => {
    const webhook = await admin.webhooks.create({ url: receiverUrl, events: ['flag.created', 'flag.updated'], description: 'e2e receiver' });
    secret = webhook.secret;
    expect(secret).toMatch(/^whsec_/);
    expect(JSON.stringify(await admin.webhooks.list())).not.toContain(secret);

    script.push(500);
    await admin.flags.create({ key: 'new-checkout', name: 'New checkout', type: 'boolean', defaultValue: false });
    await waitFor(async () => received.length >= 2, 20_000).catch(async (err) => {
      throw new Error(`${String(err)}\n${JSON.stringify(await admin.webhooks.deliveries(webhook.id))}\n${worker.output().slice(-3000)}`);
    });

    const [first, second] = received;
    for (const r of [first!, second!]) expect(r.verified).toMatchObject({ type: 'flag.created', data: { flagKey: 'new-checkout' } });
    expect([first!.status, second!.status]).toEqual([500, 200]);
    // One message, retried: the same webhook-id, so a receiver deduplicates.
    expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    expect(JSON.parse(second!.body)).toEqual({ type: 'flag.created', timestamp: expect.stringMatching(/Z$/), data: expect.objectContaining({ flagKey: 'new-checkout' }) });

    // The receiver has answered; the worker records the outcome just after, so the log may lag a moment.
    const delivery = await waitFor(async () => {
      const [d] = await admin.webhooks.deliveries(webhook.id);
      return d?.status === 'delivered' ? d : undefined;
    }, 10_000);
    expect(delivery).toMatchObject({ id: first!.headers['webhook-id'], type: 'flag.created', status: 'delivered' });
    expect(delivery!.attempts.map((a) => [a.attempt, a.outcome, a.responseCode])).toEqual([
      [1, 'failed', 500],
      [2, 'delivered', 200],
    ]);
    expect(delivery!.attempts.every((a) => a.durationMs >= 0)).toBe(true);

    await admin.webhooks.replay(webhook.id, delivery!.id);
    await waitFor(async () => received.length >= 3, 20_000);
    expect(received[2]!.headers['webhook-id']).toBe(delivery!.id);
    expect(received[2]!.verified).toMatchObject({ type: 'flag.created' });
    await waitFor(async () => ((await admin.webhooks.deliveries(webhook.id))[0]?.attempts.length ?? 0) === 3, 10_000);

    // An event it did not subscribe to is never sent; deleting the webhook stops the rest.
    await admin.flags.delete('new-checkout');
    await admin.webhooks.delete(webhook.id);
    await new Promise((r) => setTimeout(r, 500));
    expect(received).toHaveLength(3);
    expect(worker.output()).not.toMatch(/error/i);
  });
});
