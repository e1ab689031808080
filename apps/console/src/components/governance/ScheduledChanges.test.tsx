import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { aFlag, MEMBERS, renderAsMember, routeServer } from '../../testing';
import type { ScheduledChange } from './governance';
import { ScheduledChanges } from './ScheduledChanges';

const flag = aFlag({ environment: 'production' });
const scope = { token: 'id-token', tenantId: 't-1', environment: 'production' };
const aSchedule = (over: Partial<ScheduledChange>): ScheduledChange => ({
  id: 's-1',
  flagKey: 'new-checkout',
  environment: 'production',
  patch: { name: 'Later' },
  executeAt: '2026-12-01T09:00:00.000Z',
  author: 'user:u-ada',
  createdAt: '2026-11-28T10:00:00.000Z',
  approvedBy: null,
  state: 'scheduled',
  reason: null,
  finishedAt: null,
  ...over,
});

describe('scheduled changes of a flag', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('lists pending, done and failed changes (with the reason), and cancels a pending one', async () => {
    let list = [
      aSchedule({}),
      aSchedule({ id: 's-2', state: 'applied', patch: { rules: [] }, finishedAt: '2026-11-27T09:00:00.000Z', approvedBy: 'user:u-grace' }),
      aSchedule({ id: 's-3', state: 'failed', patch: { description: 'x' }, reason: 'conflict: description changed since it was scheduled', finishedAt: '2026-11-26T09:00:00.000Z' }),
    ];
    const sent = routeServer((req) => {
      if (req.method === 'GET' && req.url === '/api/flags/new-checkout/scheduled-changes') return { status: 200, body: list };
      if (req.method === 'GET' && req.url.startsWith('/api/tenants/t-1/users')) return { status: 200, body: MEMBERS };
      if (req.method === 'DELETE' && req.url === '/api/flags/new-checkout/scheduled-changes/s-1') {
        list = list.map((s) => (s.id === 's-1' ? { ...s, state: 'cancelled' as const, finishedAt: '2026-11-28T11:00:00.000Z' } : s));
        return { status: 204, body: null };
      }
      return undefined;
    });
    renderAsMember(<ScheduledChanges flag={flag} scope={scope} />);
    const table = await screen.findByRole('table', { name: 'Scheduled changes of New checkout' });
    const rows = within(table).getAllByRole('row').slice(1);
    expect(rows.map((r) => within(r).getAllByRole('cell')[3]!.textContent)).toEqual([
      'Pending',
      expect.stringMatching(/^Done/),
      expect.stringMatching(/^Failedconflict: description changed since it was scheduled/),
    ]);
    expect(rows[0]).toHaveTextContent('Name');
    expect(rows[1]).toHaveTextContent('approved by grace@flagship.test');
    expect(within(rows[1]!).queryByRole('button')).toBeNull();

    await userEvent.click(within(rows[0]!).getByRole('button', { name: /^Cancel the change scheduled for/ }));
    await waitFor(() => expect(within(table).getAllByRole('row')[1]).toHaveTextContent('Cancelled'));
    expect(sent.filter((r) => r.method === 'DELETE')).toHaveLength(1);
    expect(screen.queryByRole('button', { name: /^Cancel/ })).toBeNull();
  });
});
