import { screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Environment } from '../api';
import { renderAsMember, routeServer } from '../testing';
import { Environments } from './Environments';

const envs = (production: boolean): Environment[] => [
  { key: 'production', name: 'Production', requireApproval: production, createdAt: '2026-11-01T00:00:00.000Z' },
  { key: 'staging', name: 'Staging', requireApproval: false, createdAt: '2026-11-01T00:00:00.000Z' },
];

describe('environments: require approval', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('lets an admin turn approval on for one environment (PATCH without X-Environment)', async () => {
    let production = false;
    const sent = routeServer((req) => {
      if (req.method === 'GET' && req.url === '/api/environments') return { status: 200, body: envs(production) };
      if (req.method === 'PATCH' && req.url === '/api/environments/production') {
        production = (req.body as { requireApproval: boolean }).requireApproval;
        return { status: 200, body: envs(production)[0] };
      }
      return undefined;
    });
    renderAsMember(<Environments />, { role: 'admin' });
    const toggle = await screen.findByRole('switch', { name: 'Require approval in Production' });
    expect(toggle).not.toBeChecked();
    expect(screen.getByRole('switch', { name: 'Require approval in Staging' })).not.toBeChecked();
    await userEvent.click(toggle);
    await waitFor(() => expect(screen.getByRole('switch', { name: 'Require approval in Production' })).toBeChecked());
    const patch = sent.find((r) => r.method === 'PATCH')!;
    expect(patch.body).toEqual({ requireApproval: true });
    expect(patch.headers).not.toHaveProperty('X-Environment');
    // One URL answers per tenant and environment: no read may come from the browser's HTTP cache.
    expect(sent.map((r) => r.cache)).toEqual(sent.map(() => 'no-store'));
    expect(screen.getByRole('switch', { name: 'Require approval in Staging' })).not.toBeChecked();
  });

  it('shows the setting in words, without a switch, to a member who is not an admin', async () => {
    routeServer((req) => (req.method === 'GET' && req.url === '/api/environments' ? { status: 200, body: envs(true) } : undefined));
    renderAsMember(<Environments />, { role: 'editor' });
    expect(await screen.findByText('Required')).toBeInTheDocument();
    expect(screen.getByText('Not required')).toBeInTheDocument();
    expect(screen.queryByRole('switch')).toBeNull();
  });
});
