import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SessionProvider } from '../session';
import { aWebhook, renderSignedIn, renderWithQueries, routeServer, SIGNED_IN } from '../testing';
import type { Webhook, WebhookDelivery } from '../tenant-queries';
import { Webhooks } from './Webhooks';

const hook: Webhook = aWebhook();

const delivered: WebhookDelivery = {
  id: 'msg_delivered',
  type: 'flag.updated',
  payload: { type: 'flag.updated', timestamp: '2026-11-28T10:05:00.000Z', data: { flagKey: 'checkout' } },
  status: 'delivered',
  attempts: [
    { attempt: 1, attemptedAt: '2026-11-28T10:05:01.000Z', outcome: 'failed', responseCode: 503, durationMs: 120, error: 'HTTP 503' },
    { attempt: 2, attemptedAt: '2026-11-28T10:05:06.000Z', outcome: 'delivered', responseCode: 200, durationMs: 42, error: null },
  ],
  nextAttemptAt: null,
  createdAt: '2026-11-28T10:05:00.000Z',
};
const pending: WebhookDelivery = { ...delivered, id: 'msg_pending', type: 'flag.created', status: 'pending', attempts: [], nextAttemptAt: '2026-11-28T10:06:00.000Z' };

describe('Webhooks', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('adds a webhook with its events and description, shows the signing secret once with a copy button, and forgets it when dismissed', async () => {
    const hooks: Webhook[] = [];
    const writeText = vi.fn(async () => {});
    Object.defineProperty(navigator, 'clipboard', { value: { writeText }, configurable: true });
    const sent = routeServer((req) => {
      if (req.method === 'GET' && req.url.startsWith('/api/webhooks?')) return { status: 200, body: hooks };
      if (req.method === 'POST' && req.url === '/api/webhooks') {
        hooks.push(hook);
        return { status: 201, body: { ...hook, secret: 'whsec_c2VjcmV0LW9uY2U=' } };
      }
      return undefined;
    });
    renderSignedIn(<Webhooks />);
    await screen.findByText('No webhooks yet.');
    await userEvent.type(screen.getByRole('textbox', { name: 'Endpoint URL' }), 'https://hooks.example.com/flagship');
    // The flag events are checked by default; add segment.updated, drop flag.deleted.
    await userEvent.click(screen.getByRole('checkbox', { name: /^segment\.updated/ }));
    await userEvent.click(screen.getByRole('checkbox', { name: /^flag\.deleted/ }));
    await userEvent.type(screen.getByRole('textbox', { name: 'Description' }), 'Deploy bot');
    await userEvent.click(screen.getByRole('button', { name: 'Add webhook' }));

    const secret = await screen.findByRole('region', { name: 'Signing secret of https://hooks.example.com/flagship' });
    expect(sent.find((r) => r.method === 'POST')).toMatchObject({
      url: '/api/webhooks',
      headers: { 'X-Tenant-ID': 't-1', Authorization: 'Bearer id-token' },
      body: { url: 'https://hooks.example.com/flagship', events: ['flag.created', 'flag.updated', 'segment.updated'], description: 'Deploy bot' },
    });
    expect(sent.find((r) => r.method === 'POST')?.headers['X-Environment']).toBeUndefined();
    expect(within(secret).getByTestId('secret')).toHaveTextContent('whsec_c2VjcmV0LW9uY2U=');
    expect(within(secret).getByRole('note')).toHaveTextContent('you will not see it again');
    await userEvent.click(within(secret).getByRole('button', { name: 'Copy secret' }));
    expect(writeText).toHaveBeenCalledWith('whsec_c2VjcmV0LW9uY2U=');
    await within(secret).findByText('Copied to the clipboard.');

    // The list, refetched, has the webhook and no secret; dismissed, the secret is gone from the page.
    const row = (await screen.findByRole('cell', { name: /Deploy bot/ })).closest('tr') as HTMLElement;
    expect(within(row).getAllByRole('cell').map((c) => c.textContent)).toEqual([
      'https://hooks.example.com/flagshipDeploy bot',
      'flag.created, flag.updated, flag.deleted',
      'Enabled',
      '0',
      expect.any(String),
    ]);
    await userEvent.click(within(secret).getByRole('button', { name: 'I have stored the secret' }));
    expect(screen.queryByRole('region', { name: /Signing secret/ })).toBeNull();
    expect(document.body.textContent).not.toContain('whsec_');
  });

  it('will not send a webhook without an event or a URL', async () => {
    const sent = routeServer((req) => (req.method === 'GET' ? { status: 200, body: [] } : undefined));
    renderSignedIn(<Webhooks />);
    await screen.findByText('No webhooks yet.');
    for (const e of ['flag.created', 'flag.updated', 'flag.deleted']) await userEvent.click(screen.getByRole('checkbox', { name: new RegExp(`^${e}`) }));
    await userEvent.click(screen.getByRole('button', { name: 'Add webhook' }));
    await screen.findByText('Choose at least one event.');
    expect(sent.filter((r) => r.method === 'POST')).toEqual([]);
  });

  it('shows a disabled webhook with why and its dropped events, the delivery log with each attempt, replays a delivery and deletes after a confirm', async () => {
    const broken: Webhook = { ...hook, id: 'wh-2', url: 'https://down.example.com/in', description: '', enabled: false, disabledAt: '2026-11-28T12:00:00.000Z', disabledReason: 'every attempt failed for 86400 s', droppedEvents: 7 };
    let hooks = [hook, broken];
    const sent = routeServer((req) => {
      if (req.method === 'GET' && req.url.startsWith('/api/webhooks?')) return { status: 200, body: hooks };
      if (req.method === 'GET' && req.url === '/api/webhooks/wh-1/deliveries?limit=50') return { status: 200, body: [pending, delivered] };
      if (req.method === 'GET' && req.url === '/api/webhooks/wh-2/deliveries?limit=50') return { status: 200, body: [{ ...delivered, id: 'msg_old' }] };
      if (req.method === 'POST' && req.url === '/api/webhooks/wh-1/deliveries/msg_delivered/replay') return { status: 202, body: null };
      if (req.method === 'DELETE' && req.url === '/api/webhooks/wh-2') {
        hooks = [hook];
        return { status: 204, body: null };
      }
      return undefined;
    });
    renderSignedIn(<Webhooks />);
    const brokenRow = (await screen.findByRole('cell', { name: /down\.example\.com/ })).closest('tr') as HTMLElement;
    const cells = within(brokenRow).getAllByRole('cell');
    expect(cells[2]).toHaveTextContent(/^Disabled since .+every attempt failed for 86400 sDelete it and add it again/);
    expect(cells[3]).toHaveTextContent('7');

    await userEvent.click(screen.getByRole('button', { name: 'Deliveries of https://hooks.example.com/flagship' }));
    const log = await screen.findByRole('region', { name: 'Deliveries to https://hooks.example.com/flagship' });
    const rows = await within(log).findAllByRole('row');
    expect(rows).toHaveLength(3);
    expect(rows[1]).toHaveTextContent('flag.created');
    expect(rows[1]).toHaveTextContent('pending');
    expect(rows[1]).toHaveTextContent('No attempt yet: billing-worker sends it.');
    const attempts = within(rows[2] as HTMLElement).getAllByRole('listitem').map((li) => li.textContent);
    expect(attempts[0]).toMatch(/: failed · HTTP 503 · 120 msHTTP 503$/);
    expect(attempts[1]).toMatch(/: delivered · HTTP 200 · 42 ms$/);
    await userEvent.click(within(log).getByRole('button', { name: 'Replay delivery msg_delivered' }));
    await within(log).findByText('Queued again, with the same webhook-id.');
    expect(sent.filter((r) => r.method === 'POST').map((r) => r.url)).toEqual(['/api/webhooks/wh-1/deliveries/msg_delivered/replay']);
    // Replayed: the log is read again.
    await waitFor(() => expect(sent.filter((r) => r.url === '/api/webhooks/wh-1/deliveries?limit=50')).toHaveLength(2));

    // A disabled webhook's log: nothing can be replayed.
    await userEvent.click(screen.getByRole('button', { name: 'Deliveries of https://down.example.com/in' }));
    const brokenLog = await screen.findByRole('region', { name: 'Deliveries to https://down.example.com/in' });
    expect(await within(brokenLog).findByRole('button', { name: 'Replay delivery msg_old' })).toBeDisabled();
    expect(brokenLog).toHaveTextContent('The webhook is disabled: nothing is sent or replayed.');

    await userEvent.click(screen.getByRole('button', { name: 'Delete webhook https://down.example.com/in' }));
    const dialog = await screen.findByRole('alertdialog');
    expect(dialog).toHaveTextContent('Its delivery log goes with it');
    await userEvent.click(within(dialog).getByRole('button', { name: 'Delete webhook' }));
    await waitFor(() => expect(screen.queryByRole('cell', { name: /down\.example\.com/ })).toBeNull());
    expect(sent.filter((r) => r.method === 'DELETE').map((r) => r.url)).toEqual(['/api/webhooks/wh-2']);
  });

  it('tells a member who is not an admin that admins manage webhooks, and asks the API nothing', async () => {
    const sent = routeServer(() => undefined);
    renderWithQueries(
      <SessionProvider initial={{ ...SIGNED_IN, tenants: [{ tenant_id: 't-1', tenant_name: 'Ada', role: 'editor' }] }}>
        <Webhooks />
      </SessionProvider>,
    );
    expect(screen.getByRole('note')).toHaveTextContent("Webhooks are managed by the tenant's admins");
    expect(screen.queryByRole('button', { name: 'Add webhook' })).toBeNull();
    expect(sent).toEqual([]);
  });
});
