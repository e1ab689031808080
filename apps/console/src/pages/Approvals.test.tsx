import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { aFlag, aRequest, MEMBERS, renderAsMember, routeServer } from '../testing';
import { Approvals, INBOX_MAX_FLAGS } from './Approvals';

describe('the approval inbox', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('lists the pending requests the member may approve across flags, not their own nor closed ones, and approves from there', async () => {
    const flags = [aFlag({ key: 'a', name: 'Flag A', environment: 'production' }), aFlag({ key: 'b', name: 'Flag B', environment: 'production' })];
    let a = aRequest({ id: 'cr-a', flagKey: 'a' });
    const sent = routeServer((req) => {
      if (req.url.startsWith('/api/flags?')) return { status: 200, body: flags };
      if (req.url.startsWith('/api/tenants/t-1/users')) return { status: 200, body: MEMBERS };
      if (req.method === 'GET' && req.url === '/api/flags/a/change-requests') return { status: 200, body: [a, aRequest({ id: 'cr-old', flagKey: 'a', state: 'applied' })] };
      if (req.method === 'GET' && req.url === '/api/flags/b/change-requests') return { status: 200, body: [aRequest({ id: 'cr-mine', flagKey: 'b', author: 'user:u-ada' })] };
      if (req.method === 'POST' && req.url === '/api/flags/a/change-requests/cr-a/approve') {
        a = { ...a, state: 'approved', decidedBy: 'user:u-ada' };
        return { status: 200, body: a };
      }
      return undefined;
    });
    renderAsMember(<Approvals />, { userId: 'u-ada', role: 'editor' });
    const item = await screen.findByRole('article', { name: 'Change request by grace@flagship.test, Pending approval' });
    expect(screen.getAllByRole('article')).toHaveLength(1);
    expect(screen.getByRole('link', { name: 'Flag A' })).toHaveAttribute('href', '/flags/a');
    expect(screen.getByText('1 pending request you cannot approve (your own).')).toBeInTheDocument();
    await userEvent.click(within(item).getByRole('button', { name: 'Approve' }));
    await screen.findByText('Nothing waits for your approval in production.');
    expect(sent.filter((r) => r.method === 'POST')).toHaveLength(1);
  });

  it(`reads the requests of at most ${INBOX_MAX_FLAGS} flags, the most recently updated, and says so`, async () => {
    const flags = Array.from({ length: INBOX_MAX_FLAGS + 50 }, (_, i) => aFlag({ key: `f${i}`, name: `F${i}`, updatedAt: new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString() }));
    const sent = routeServer((req) => {
      if (req.url.startsWith('/api/flags?')) return { status: 200, body: flags };
      if (req.url.startsWith('/api/tenants/t-1/users')) return { status: 200, body: MEMBERS };
      if (req.url.endsWith('/change-requests')) return { status: 200, body: [] };
      return undefined;
    });
    renderAsMember(<Approvals />);
    await screen.findByText(`Checked the ${INBOX_MAX_FLAGS} most recently updated of ${INBOX_MAX_FLAGS + 50} flags: a request on another flag is on that flag’s page.`);
    const reads = sent.filter((r) => r.url.endsWith('/change-requests')).map((r) => r.url);
    expect(reads).toHaveLength(INBOX_MAX_FLAGS);
    // The newest 100 of f0..f149: f50..f149.
    expect(reads).toContain('/api/flags/f149/change-requests');
    expect(reads).not.toContain('/api/flags/f49/change-requests');
    await waitFor(() => expect(screen.getByText('Nothing waits for your approval in production.')).toBeInTheDocument());
  });
});
