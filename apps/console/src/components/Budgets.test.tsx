import { screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Budget } from '../tenant-queries';
import { renderSignedIn, routeServer, type Sent } from '../testing';
import { Budgets } from './Budgets';

const client = { clientId: 'ffc_abc', name: 'Checkout backend', scopes: ['ai:invoke'], productKeys: [], createdAt: '2026-11-22T10:00:00.000Z', createdBy: 'u-1', secretRotatedAt: null };
const budget = (over: Partial<Budget>): Budget => ({
  kind: 'client',
  id: 'ffc_abc',
  monthlyCapMicroCredits: 5_000_000,
  spentMicroCredits: 1_250_000,
  reservedMicroCredits: 250_000,
  month: '2026-11',
  createdAt: '2026-11-22T10:00:00.000Z',
  updatedAt: '2026-11-22T10:00:00.000Z',
  ...over,
});

/** A server holding `budgets`, answering the console's PUT and DELETE as the API does. */
function budgetServer(budgets: Budget[]) {
  return routeServer((req) => {
    if (req.method === 'GET' && req.url === '/api/oauth/clients?limit=1000') return { status: 200, body: [client] };
    if (req.method === 'GET' && req.url === '/api/billing/budgets?limit=1000') return { status: 200, body: budgets };
    const m = /^\/api\/billing\/budgets\/(client|product)\/([^/]+)$/.exec(req.url);
    if (m && req.method === 'PUT') {
      const set = budget({ kind: m[1] as Budget['kind'], id: decodeURIComponent(m[2]!), monthlyCapMicroCredits: (req.body as { monthlyCapMicroCredits: number }).monthlyCapMicroCredits, spentMicroCredits: 0, reservedMicroCredits: 0 });
      budgets.splice(0, budgets.length, ...budgets.filter((b) => !(b.kind === set.kind && b.id === set.id)), set);
      return { status: 200, body: set };
    }
    if (m && req.method === 'DELETE') {
      budgets.splice(0, budgets.length, ...budgets.filter((b) => !(b.kind === m[1] && b.id === decodeURIComponent(m[2]!))));
      return { status: 204, body: undefined };
    }
    return undefined;
  });
}

const sentOnce = (sent: Sent[], method: string) =>
  vi.waitFor(() => {
    const s = sent.find((r) => r.method === method);
    if (!s) throw new Error(`no ${method} yet`);
    return s;
  });

describe('budgets on the billing page', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('lists each budget with what the month spent, its cap and what is held, naming the client', async () => {
    budgetServer([budget({}), budget({ kind: 'product', id: 'core', monthlyCapMicroCredits: 1_000_000, spentMicroCredits: 900_000, reservedMicroCredits: 100_000 })]);
    renderSignedIn(<Budgets />);
    const table = await screen.findByRole('table', { name: 'Budgets' });
    const rows = within(table).getAllByRole('row').slice(1);
    expect(rows.map((r) => within(r).getAllByRole('cell').slice(0, 4).map((c) => c.textContent))).toEqual([
      ['OAuth client Checkout backend (ffc_abc)', '1.25', '5', '0.25'],
      ['Product key core', '0.9 spent', '1', '0.1'],
    ]);
  });

  it("sets a client's budget in micro-credits, then the list shows it", async () => {
    const sent = budgetServer([]);
    renderSignedIn(<Budgets />);
    await screen.findByText('No budgets set: requests are limited only by the credit balance.');
    // The tenant's one client is chosen.
    expect(await screen.findByRole('button', { name: /OAuth client$/ })).toHaveTextContent('Checkout backend (ffc_abc)');
    await userEvent.type(screen.getByRole('textbox', { name: 'Monthly cap (credits)' }), '2.5');
    await userEvent.click(screen.getByRole('button', { name: 'Save budget' }));
    const put = await sentOnce(sent, 'PUT');
    expect(put).toMatchObject({ url: '/api/billing/budgets/client/ffc_abc', body: { monthlyCapMicroCredits: 2_500_000 }, headers: { 'X-Tenant-ID': 't-1' } });
    const table = await screen.findByRole('table', { name: 'Budgets' });
    expect(within(table).getByText('OAuth client Checkout backend (ffc_abc)')).toBeInTheDocument();
  });

  it("sets a product key's budget, and removes a budget", async () => {
    const sent = budgetServer([budget({})]);
    renderSignedIn(<Budgets />);
    await screen.findByRole('table', { name: 'Budgets' });
    await userEvent.click(screen.getByRole('button', { name: /Budget for$/ }));
    await userEvent.click(await screen.findByRole('option', { name: 'A product key' }));
    expect(screen.getByRole('textbox', { name: 'Product key' })).toHaveValue('core');
    await userEvent.type(screen.getByRole('textbox', { name: 'Monthly cap (credits)' }), '0');
    await userEvent.click(screen.getByRole('button', { name: 'Save budget' }));
    expect(await sentOnce(sent, 'PUT')).toMatchObject({ url: '/api/billing/budgets/product/core', body: { monthlyCapMicroCredits: 0 } });

    await userEvent.click(await screen.findByRole('button', { name: 'Remove budget of OAuth client Checkout backend (ffc_abc)' }));
    expect(await sentOnce(sent, 'DELETE')).toMatchObject({ url: '/api/billing/budgets/client/ffc_abc' });
    await vi.waitFor(() => expect(screen.queryByText('OAuth client Checkout backend (ffc_abc)')).toBeNull());
    expect(screen.getByText('Product key core')).toBeInTheDocument();
  });

  it('refuses a cap that is not a number of credits without calling the API', async () => {
    const sent = budgetServer([]);
    renderSignedIn(<Budgets />);
    await screen.findByRole('button', { name: /OAuth client$/ });
    await userEvent.type(screen.getByRole('textbox', { name: 'Monthly cap (credits)' }), '-3');
    await userEvent.click(screen.getByRole('button', { name: 'Save budget' }));
    expect(await screen.findByText('Enter a number of credits, 0 or more.')).toBeInTheDocument();
    expect(sent.filter((r) => r.method === 'PUT')).toEqual([]);
  });
});
