import { fireEvent, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { aFlag, renderWithQueries, routeServer, type Answer, type Sent } from '../../testing';
import { FlagEditor } from '../targeting/FlagEditor';
import { approvalReason, isoOfLocal } from './governance';

const scope = { token: 'id-token', tenantId: 't-1', environment: 'production' };
const flag = aFlag({ environment: 'production', version: '3.4' });
const approvalRequired = { type: '/problems/approval-required', title: "This environment requires approval for changes to a flag's settings", status: 409, detail: 'Send a change request.' };

function serve(writes: (req: Sent) => Answer | undefined) {
  return routeServer((req) => (req.method === 'GET' && req.url.startsWith('/api/flags?') ? { status: 200, body: [flag] } : writes(req)));
}

async function rename(to: string) {
  const name = screen.getAllByRole('textbox', { name: 'Name' })[0]!;
  await userEvent.clear(name);
  await userEvent.type(name, to);
}

describe('the flag editor where changes need approval, and scheduling', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('knows which edits need approval as the API does: targeting where it is required, served-everywhere fields while any environment requires it', () => {
    expect(approvalReason(['targets'], 'production', ['production'])).toBe('Changes in production need approval');
    expect(approvalReason(['name', 'description', 'tags'], 'production', ['production'])).toBeNull();
    expect(approvalReason(['rules'], 'staging', ['production'])).toBeNull();
    expect(approvalReason(['variations', 'name'], 'staging', ['production'])).toBe('Variations (and fallthrough weights) apply in every environment, and production requires approval');
    expect(approvalReason(['variations'], 'staging', [])).toBeNull();
  });

  it('turns Save of targeting into a change request with a comment and an apply-at time', async () => {
    const sent = serve((req) => (req.method === 'POST' && req.url === '/api/flags/new-checkout/change-requests' ? { status: 201, body: { id: 'cr-1' } } : undefined));
    renderWithQueries(<FlagEditor flag={flag} scope={scope} approvalEnvironments={['production']} />);
    fireEvent.change(screen.getByRole('textbox', { name: 'Targets served true' }), { target: { value: 'alice' } });
    expect(screen.getByRole('heading', { name: 'Changes in production need approval' })).toBeInTheDocument();
    await userEvent.type(screen.getByRole('textbox', { name: 'Comment for the approver' }), 'For the launch');
    fireEvent.change(screen.getByLabelText('Apply at (optional)'), { target: { value: '2026-12-01T09:30' } });
    await userEvent.click(screen.getByRole('button', { name: 'Request approval' }));

    await screen.findByText('Change request sent for approval: Individual targets.');
    expect(sent.filter((r) => r.method === 'PATCH')).toEqual([]);
    expect(sent.find((r) => r.method === 'POST')).toMatchObject({
      headers: { 'X-Environment': 'production' },
      body: { patch: { targets: [{ variationId: 'v-true', values: ['alice'] }] }, comment: 'For the launch', executeAt: isoOfLocal('2026-12-01T09:30') },
    });
    // The edits are in the request now: the draft is the flag again.
    expect(screen.getByRole('textbox', { name: 'Targets served true' })).toHaveValue('');
  });

  it('saves a rename directly where approval is required (names are bookkeeping)', async () => {
    const sent = serve((req) => (req.method === 'PATCH' ? { status: 200, body: { ...flag, name: 'Checkout v2', version: '3.5' } } : undefined));
    renderWithQueries(<FlagEditor flag={flag} scope={scope} approvalEnvironments={['production']} />);
    await rename('Checkout v2');
    expect(screen.queryByRole('heading', { name: /need approval/ })).toBeNull();
    await userEvent.click(screen.getByRole('button', { name: 'Save changes' }));
    await screen.findByText('Saved: Name.');
    expect(sent.filter((r) => r.method === 'POST')).toEqual([]);
  });

  it('switches to a change request when the PATCH is refused with 409 approval-required, without showing it as a failure', async () => {
    const sent = serve((req) => {
      if (req.method === 'PATCH') return { status: 409, body: approvalRequired };
      if (req.method === 'POST' && req.url.endsWith('/change-requests')) return { status: 201, body: { id: 'cr-2' } };
      return undefined;
    });
    renderWithQueries(<FlagEditor flag={flag} scope={scope} />);
    await rename('Checkout v3');
    await userEvent.click(screen.getByRole('button', { name: 'Save changes' }));
    await screen.findByRole('heading', { name: 'Changes in production need approval' });
    expect(screen.queryByRole('alert')).toBeNull();
    expect(screen.getAllByRole('textbox', { name: 'Name' })[0]).toHaveValue('Checkout v3');
    await userEvent.click(screen.getByRole('button', { name: 'Request approval' }));
    await screen.findByText('Change request sent for approval: Name.');
    const posted = sent.filter((r) => r.method === 'POST');
    expect(posted).toHaveLength(1);
    expect(posted[0]!.body).toEqual({ patch: { name: 'Checkout v3' } });
  });

  it('schedules the current edits for a time where no approval is needed', async () => {
    const sent = serve((req) => (req.method === 'POST' && req.url === '/api/flags/new-checkout/scheduled-changes' ? { status: 201, body: { id: 's-1' } } : undefined));
    renderWithQueries(<FlagEditor flag={flag} scope={scope} />);
    expect(screen.getByRole('button', { name: 'Schedule changes' })).toBeDisabled();
    await rename('Checkout at nine');
    expect(screen.getByRole('button', { name: 'Schedule changes' })).toBeDisabled();
    fireEvent.change(screen.getByLabelText('Schedule for'), { target: { value: '2026-12-24T09:00' } });
    await userEvent.click(screen.getByRole('button', { name: 'Schedule changes' }));
    await screen.findByText(/^Scheduled for .*: Name\.$/);
    expect(sent.find((r) => r.method === 'POST')?.body).toEqual({ patch: { name: 'Checkout at nine' }, executeAt: isoOfLocal('2026-12-24T09:00') });
    expect(sent.filter((r) => r.method === 'PATCH')).toEqual([]);
  });
});
