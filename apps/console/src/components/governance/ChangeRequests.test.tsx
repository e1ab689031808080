import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { aFlag, aRequest, MEMBERS, renderAsMember, routeServer, type Answer, type Sent } from '../../testing';
import { ChangeRequests } from './ChangeRequests';
import { approvalBlocked, type ChangeRequest } from './governance';

const flag = aFlag({ environment: 'production', version: '3.4', name: 'New checkout' });
const scope = { token: 'id-token', tenantId: 't-1', environment: 'production' };


function serve(list: () => ChangeRequest[], writes: (req: Sent) => Answer | undefined = () => undefined) {
  return routeServer((req) => {
    if (req.method === 'GET' && req.url === '/api/flags/new-checkout/change-requests') return { status: 200, body: list() };
    if (req.method === 'GET' && req.url.startsWith('/api/tenants/t-1/users')) return { status: 200, body: MEMBERS };
    return writes(req);
  });
}

describe('change requests of a flag', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('says who may approve before the API would refuse: never the author, never a viewer', () => {
    expect(approvalBlocked({ author: 'user:u-ada', state: 'pending' }, 'u-ada', 'admin')).toMatch(/another member must approve/);
    expect(approvalBlocked({ author: 'user:u-grace', state: 'pending' }, 'u-ada', 'viewer')).toMatch(/Viewers cannot approve/);
    expect(approvalBlocked({ author: 'user:u-grace', state: 'pending' }, 'u-ada', 'editor')).toBeNull();
  });

  it('shows a pending request with its diff against the flag and its comments, and approves it as another member', async () => {
    let current = aRequest();
    const sent = serve(
      () => [current],
      (req) => {
        if (req.method === 'POST' && req.url === '/api/flags/new-checkout/change-requests/cr-1/approve') {
          current = aRequest({ state: 'approved', decidedBy: 'user:u-ada' });
          return { status: 200, body: current };
        }
        return undefined;
      },
    );
    renderAsMember(<ChangeRequests flag={flag} scope={scope} />, { userId: 'u-ada', role: 'editor' });
    const item = await screen.findByRole('article', { name: 'Change request by grace@flagship.test, Pending approval' });
    const diff = within(item).getByRole('table', { name: 'Name' });
    expect(diff).toHaveTextContent('"New checkout"');
    expect(diff).toHaveTextContent('"Checkout v2"');
    expect(within(item).getByRole('list', { name: 'Comments' })).toHaveTextContent('grace@flagship.test');
    expect(within(item).getByRole('list', { name: 'Comments' })).toHaveTextContent('Rename for the launch');

    await userEvent.click(within(item).getByRole('button', { name: 'Approve' }));
    const approved = await screen.findByRole('article', { name: 'Change request by grace@flagship.test, Approved, not applied' });
    expect(sent.find((r) => r.url.endsWith('/approve'))).toMatchObject({ method: 'POST', headers: { 'X-Environment': 'production', 'X-Tenant-ID': 't-1' } });
    expect(approved).toHaveTextContent('approved by ada@flagship.test');
    expect(within(approved).getByRole('button', { name: 'Apply' })).toBeEnabled();
  });

  it('hides Approve from the author with the reason, and lets them withdraw or comment', async () => {
    let current = aRequest({ author: 'user:u-ada', comments: [] });
    const sent = serve(
      () => [current],
      (req) => {
        if (req.url.endsWith('/comments')) {
          current = { ...current, comments: [{ author: 'user:u-ada', body: (req.body as { comment: string }).comment, at: '2026-11-28T11:00:00.000Z' }] };
          return { status: 200, body: current };
        }
        if (req.url.endsWith('/reject')) {
          current = { ...current, state: 'rejected', decidedBy: 'user:u-ada' };
          return { status: 200, body: current };
        }
        return undefined;
      },
    );
    renderAsMember(<ChangeRequests flag={flag} scope={scope} />, { userId: 'u-ada', role: 'admin' });
    const item = await screen.findByRole('article', { name: /Pending approval/ });
    expect(within(item).queryByRole('button', { name: 'Approve' })).toBeNull();
    expect(item).toHaveTextContent('You made this request: another member must approve it.');

    await userEvent.type(within(item).getByRole('textbox', { name: 'Comment' }), 'Needed for Friday');
    await userEvent.click(within(item).getByRole('button', { name: 'Add comment' }));
    await waitFor(() => expect(screen.getByRole('list', { name: 'Comments' })).toHaveTextContent('Needed for Friday'));
    expect(sent.find((r) => r.url.endsWith('/comments'))?.body).toEqual({ comment: 'Needed for Friday' });

    await userEvent.click(within(screen.getByRole('article')).getByRole('button', { name: 'Withdraw' }));
    await screen.findByRole('article', { name: /Rejected/ });
    expect(screen.queryByRole('button', { name: 'Withdraw' })).toBeNull();
  });

  it('applies an approved request, and shows a stale one clearly after the 409 without offering any step', async () => {
    let current = aRequest({ state: 'approved', decidedBy: 'user:u-ada' });
    const sent = serve(
      () => [current],
      (req) => {
        if (req.url.endsWith('/apply')) {
          current = { ...current, state: 'stale' };
          return { status: 409, body: { type: '/problems/change-request-stale', title: 'The flag changed after this change request was made', status: 409, detail: 'The flag is at "3.6".', instance: 'req-9' } };
        }
        return undefined;
      },
    );
    renderAsMember(<ChangeRequests flag={{ ...flag, version: '3.6' }} scope={scope} />, { userId: 'u-ada' });
    const item = await screen.findByRole('article', { name: /Approved, not applied/ });
    await userEvent.click(within(item).getByRole('button', { name: 'Apply' }));
    const stale = await screen.findByRole('article', { name: /Stale/ });
    expect(sent.find((r) => r.url.endsWith('/apply'))).toMatchObject({ method: 'POST' });
    expect(within(stale).getByRole('note')).toHaveTextContent('Stale: the flag changed after this request was made');
    expect(within(stale).getByRole('note')).toHaveTextContent('"3.6"');
    expect(within(stale).queryByRole('button')).toBeNull();
    // The closed request lists its fields instead of a diff against a flag it no longer applies to.
    expect(stale).toHaveTextContent('Changes: Name.');
  });

  it('shows a viewer why they cannot approve, and no step or comment they would be refused', async () => {
    serve(() => [aRequest()]);
    renderAsMember(<ChangeRequests flag={flag} scope={scope} />, { userId: 'u-ada', role: 'viewer' });
    const item = await screen.findByRole('article', { name: /Pending approval/ });
    expect(item).toHaveTextContent('Viewers cannot approve changes: an editor or admin must.');
    expect(within(item).queryByRole('button')).toBeNull();
    expect(within(item).queryByRole('textbox')).toBeNull();
  });

  it('says so when the flag has no requests', async () => {
    serve(() => []);
    renderAsMember(<ChangeRequests flag={flag} scope={scope} />);
    expect(await screen.findByText('No change requests for this flag in production.')).toBeInTheDocument();
  });
});
