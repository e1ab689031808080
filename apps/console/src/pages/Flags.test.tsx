import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Router } from 'wouter';
import { memoryLocation } from 'wouter/memory-location';
import { SessionProvider } from '../session';
import { aFlag, renderWithQueries, routeServer, scriptServer } from '../testing';
import { Flags } from './Flags';

const session = { token: 'id-token', email: 'ada@example.com', tenants: [], tenantId: 't-1', environment: 'production' };

function renderList() {
  renderWithQueries(
    <SessionProvider initial={session}>
      <Router hook={memoryLocation({ path: '/' }).hook}>
        <Flags />
      </Router>
    </SessionProvider>,
  );
}

describe('Flags list', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('filters by tag, together with the search', async () => {
    scriptServer([
      {
        status: 200,
        body: [
          aFlag({ key: 'checkout', name: 'Checkout', tags: ['web', 'payments'] }),
          aFlag({ key: 'dark-mode', name: 'Dark mode', tags: ['web'] }),
          aFlag({ key: 'ios-upsell', name: 'iOS upsell', tags: ['mobile', 'payments'] }),
        ],
      },
    ]);
    renderList();
    const table = await screen.findByRole('table', { name: 'Flags in production' });
    expect(within(table).getAllByRole('link').map((a) => a.textContent)).toEqual(['Checkout', 'Dark mode', 'iOS upsell']);
    await userEvent.click(screen.getByRole('button', { name: /Tag/ }));
    expect((await screen.findAllByRole('option')).map((o) => o.textContent)).toEqual(['All tags', 'mobile', 'payments', 'web']);
    await userEvent.click(screen.getByRole('option', { name: 'payments' }));
    expect(within(screen.getByRole('table')).getAllByRole('link').map((a) => a.textContent)).toEqual(['Checkout', 'iOS upsell']);
    await userEvent.type(screen.getByRole('searchbox', { name: 'Search flags' }), 'ios');
    expect(within(screen.getByRole('table')).getAllByRole('link').map((a) => a.textContent)).toEqual(['iOS upsell']);
    await userEvent.clear(screen.getByRole('searchbox', { name: 'Search flags' }));
    await userEvent.type(screen.getByRole('searchbox', { name: 'Search flags' }), 'dark');
    expect(screen.getByText('No flag matches “dark” with tag “payments”.')).toBeInTheDocument();
  }, 30000);

  it('filters by lifecycle as the server decides it, says what stale means, and shows when each flag was last evaluated', async () => {
    const hourAgo = new Date(Date.now() - 3600_000).toISOString();
    const all = [
      aFlag({ key: 'checkout', name: 'Checkout', lastEvaluatedAt: hourAgo }),
      aFlag({ key: 'old-banner', name: 'Old banner', lastEvaluatedAt: null, servingOneVariationSince: '2026-01-01T00:00:00.000Z' }),
    ];
    const sent = routeServer((req) => {
      if (req.url === '/api/flags?limit=1000') return { status: 200, body: all };
      if (req.url.startsWith('/api/flags?limit=1000&lifecycle=stale')) return { status: 200, body: [all[1]] };
      if (req.url.startsWith('/api/flags?limit=1000&lifecycle=active')) return { status: 200, body: [all[0]] };
      return undefined;
    });
    renderList();
    const table = await screen.findByRole('table', { name: 'Flags in production' });
    const cells = (name: string) => within(screen.getByRole('row', { name: new RegExp(name) })).getAllByRole('cell').map((c) => c.textContent);
    expect(cells('Checkout')[4]).toBe('1 hour ago');
    expect(cells('Old banner')[4]).toMatch(/^neverone value since .+ ago$/);
    expect(within(table).getAllByRole('link').map((a) => a.textContent)).toEqual(['Checkout', 'Old banner']);

    await userEvent.click(screen.getByRole('button', { name: /Lifecycle/ }));
    await userEvent.click(screen.getByRole('option', { name: 'Stale' }));
    await screen.findByText(/^Stale: not evaluated in production for 30 days \(a newer flag counts from its creation\), or serving one value/);
    await waitFor(() => expect(within(screen.getByRole('table')).getAllByRole('link').map((a) => a.textContent)).toEqual(['Old banner']));
    expect(sent.map((r) => r.url)).toContain('/api/flags?limit=1000&lifecycle=stale&staleAfterDays=30');

    // Another period asks the server again.
    await userEvent.click(screen.getByRole('button', { name: /Over/ }));
    await userEvent.click(screen.getByRole('option', { name: '7 days' }));
    await screen.findByText(/^Stale: not evaluated in production for 7 days/);
    await waitFor(() => expect(sent.map((r) => r.url)).toContain('/api/flags?limit=1000&lifecycle=stale&staleAfterDays=7'));

    await userEvent.click(screen.getByRole('button', { name: /Lifecycle/ }));
    await userEvent.click(screen.getByRole('option', { name: 'Active' }));
    await waitFor(() => expect(within(screen.getByRole('table')).getAllByRole('link').map((a) => a.textContent)).toEqual(['Checkout']));
    expect(screen.getByTestId('lifecycle-note')).toHaveTextContent('Active: evaluated in production in the last 7 days');
    await userEvent.type(screen.getByRole('searchbox', { name: 'Search flags' }), 'banner');
    expect(screen.getByText('No active flag matches “banner”.')).toBeInTheDocument();
  }, 30000);
});
