import { screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Router } from 'wouter';
import { memoryLocation } from 'wouter/memory-location';
import { SessionProvider } from '../session';
import { aFlag, renderWithQueries, scriptServer } from '../testing';
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
});
