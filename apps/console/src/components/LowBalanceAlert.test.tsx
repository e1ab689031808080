import { screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { LowBalanceAlert as Alert } from '../tenant-queries';
import { renderSignedIn, routeServer } from '../testing';
import { LowBalanceAlert } from './LowBalanceAlert';

describe('low-balance alert on the billing page', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('warns while the balance is at or below the threshold, lists the crossings, and saves a new threshold in micro-credits', async () => {
    let alert: Alert = { threshold: 2_000_000, armed: false, below: true, balance: 1_500_000 };
    const sent = routeServer((req) => {
      if (req.method === 'GET' && req.url === '/api/billing/low-balance-alert') return { status: 200, body: alert };
      if (req.method === 'GET' && req.url === '/api/billing/low-balance-alert/crossings?limit=10') {
        return { status: 200, body: [{ id: 'c-1', threshold: 2_000_000, balance: 1_999_000, crossedAt: '2026-11-25T10:00:00.000Z' }] };
      }
      if (req.method === 'PUT' && req.url === '/api/billing/low-balance-alert') {
        const { threshold } = req.body as { threshold: number };
        alert = { threshold, armed: alert.balance > threshold, below: alert.balance <= threshold, balance: alert.balance };
        return { status: 200, body: alert };
      }
      return undefined;
    });
    renderSignedIn(<LowBalanceAlert />);
    expect(await screen.findByRole('alert')).toHaveTextContent('The balance (1.5 credits) is at or below the alert threshold of 2 credits');
    const table = await screen.findByRole('table', { name: 'Recorded crossings' });
    expect(within(table).getByText('1.999')).toBeInTheDocument();
    expect(screen.getByTestId('low-balance-state')).toHaveTextContent('Recorded: armed again once the balance is back above the threshold.');

    const field = screen.getByRole('textbox', { name: 'Alert when the balance falls to (credits)' });
    expect(field).toHaveValue('2');
    await userEvent.clear(field);
    await userEvent.type(field, '0.5');
    await userEvent.click(screen.getByRole('button', { name: 'Save alert' }));
    const put = await vi.waitFor(() => {
      const p = sent.find((r) => r.method === 'PUT');
      if (!p) throw new Error('not sent yet');
      return p;
    });
    expect(put.body).toEqual({ threshold: 500_000 });
    expect(put.headers).toMatchObject({ 'X-Tenant-ID': 't-1' });
    await vi.waitFor(() => expect(screen.queryByRole('alert')).toBeNull());
    expect(screen.getByTestId('low-balance-state')).toHaveTextContent('Armed: the next fall to the threshold is recorded.');
  });

  it('refuses a threshold that is not a number of credits without calling the API', async () => {
    const sent = routeServer((req) => {
      if (req.url === '/api/billing/low-balance-alert') return { status: 200, body: { threshold: null, armed: false, below: false, balance: 0 } };
      if (req.url.startsWith('/api/billing/low-balance-alert/crossings')) return { status: 200, body: [] };
      return undefined;
    });
    renderSignedIn(<LowBalanceAlert />);
    expect(await screen.findByTestId('low-balance-state')).toHaveTextContent('No alert set.');
    await userEvent.type(screen.getByRole('textbox', { name: 'Alert when the balance falls to (credits)' }), '-3');
    await userEvent.click(screen.getByRole('button', { name: 'Save alert' }));
    expect(await screen.findByText('Enter a number of credits, 0 or more.')).toBeInTheDocument();
    expect(sent.filter((r) => r.method === 'PUT')).toEqual([]);
  });
});
