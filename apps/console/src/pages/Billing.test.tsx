import { screen, within } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { renderSignedIn, routeServer } from '../testing';
import { Billing } from './Billing';

describe('the billing page', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('has a Budgets panel beside the credits, listing spent against each cap', async () => {
    routeServer((req) => {
      if (req.method !== 'GET') return undefined;
      if (req.url === '/api/billing/subscription') {
        return { status: 200, body: { id: null, plan: 'free', status: 'active', currentPeriodStart: null, currentPeriodEnd: null, cancelAtPeriodEnd: false, productKey: 'core' } };
      }
      if (req.url === '/api/billing/credits') return { status: 200, body: { balance: 3_000_000, reserved: 0 } };
      if (req.url === '/api/billing/low-balance-alert') return { status: 200, body: { threshold: null, armed: false, below: false, balance: 3_000_000 } };
      if (req.url.startsWith('/api/billing/low-balance-alert/crossings')) return { status: 200, body: [] };
      if (req.url === '/api/oauth/clients?limit=1000') return { status: 200, body: [] };
      if (req.url === '/api/billing/budgets?limit=1000') {
        return {
          status: 200,
          body: [{ kind: 'product', id: 'core', monthlyCapMicroCredits: 2_000_000, spentMicroCredits: 500_000, reservedMicroCredits: 0, month: '2026-11', createdAt: '2026-11-01T00:00:00.000Z', updatedAt: '2026-11-01T00:00:00.000Z' }],
        };
      }
      return undefined;
    });
    renderSignedIn(<Billing />);
    const panel = await screen.findByRole('region', { name: 'Budgets' });
    const table = await within(panel).findByRole('table', { name: 'Budgets' });
    expect(within(table).getByText('Product key core')).toBeInTheDocument();
    expect(within(table).getByText('0.5')).toBeInTheDocument();
    // With no OAuth client yet, the form says so; a product-key budget can still be set.
    expect(within(panel).getByText('This tenant has no OAuth clients yet.')).toBeInTheDocument();
    expect(within(panel).getByRole('textbox', { name: 'Monthly cap (credits)' })).toBeInTheDocument();
  });
});
