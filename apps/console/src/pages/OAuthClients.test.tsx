import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { renderSignedIn, routeServer } from '../testing';
import type { OAuthClient } from '../tenant-queries';
import { OAuthClients } from './OAuthClients';

const stored: OAuthClient = {
  clientId: 'ffc_abc',
  name: 'Checkout backend',
  scopes: ['flags:read', 'flags:evaluate'],
  productKeys: ['core'],
  createdAt: '2026-11-22T10:00:00.000Z',
  createdBy: 'u-1',
  secretRotatedAt: null,
};

describe('OAuth clients', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('creates a client with scopes and product keys, shows its secret once with a copy button and a warning, and forgets it when dismissed', async () => {
    const clients: OAuthClient[] = [];
    const writeText = vi.fn(async () => {});
    Object.defineProperty(navigator, 'clipboard', { value: { writeText }, configurable: true });
    const sent = routeServer((req) => {
      if (req.method === 'GET' && req.url.startsWith('/api/oauth/clients')) return { status: 200, body: clients };
      if (req.method === 'POST' && req.url === '/api/oauth/clients') {
        clients.push(stored);
        return { status: 201, body: { ...stored, clientSecret: 'ffs_once-only-secret' } };
      }
      return undefined;
    });
    renderSignedIn(<OAuthClients />);
    await screen.findByText('No OAuth clients yet.');
    await userEvent.type(screen.getByRole('textbox', { name: 'Client name' }), 'Checkout backend');
    // flags:read and flags:evaluate are checked by default; add flags:write, drop flags:evaluate.
    await userEvent.click(screen.getByRole('checkbox', { name: 'flags:write' }));
    await userEvent.click(screen.getByRole('checkbox', { name: 'flags:evaluate' }));
    await userEvent.click(screen.getByRole('button', { name: 'Create client' }));

    const secret = await screen.findByRole('region', { name: 'Secret of Checkout backend' });
    expect(sent.find((r) => r.method === 'POST')).toMatchObject({
      url: '/api/oauth/clients',
      headers: { 'X-Tenant-ID': 't-1', Authorization: 'Bearer id-token' },
      body: { name: 'Checkout backend', scopes: ['flags:read', 'flags:write'], productKeys: ['core'] },
    });
    expect(within(secret).getByTestId('client-secret')).toHaveTextContent('ffs_once-only-secret');
    expect(within(secret).getByRole('note')).toHaveTextContent('It is shown only once');
    await userEvent.click(within(secret).getByRole('button', { name: 'Copy secret' }));
    expect(writeText).toHaveBeenCalledWith('ffs_once-only-secret');
    await within(secret).findByText('Copied to the clipboard.');

    // The list, refetched, has the client and no secret.
    await screen.findByRole('button', { name: 'Delete Checkout backend' });
    await userEvent.click(within(secret).getByRole('button', { name: 'I have stored the secret' }));
    expect(screen.queryByRole('region', { name: /Secret of/ })).toBeNull();
    expect(screen.queryByText('ffs_once-only-secret')).toBeNull();
    expect(document.body.textContent).not.toContain('ffs_once-only-secret');
  });

  it('offers the gateway scope ai:invoke, and will not send a client without a scope', async () => {
    const sent = routeServer((req) => {
      if (req.method === 'GET' && req.url.startsWith('/api/oauth/clients')) return { status: 200, body: [] };
      if (req.method === 'POST' && req.url === '/api/oauth/clients') {
        return { status: 201, body: { ...stored, name: 'Gateway backend', scopes: ['ai:invoke'], clientSecret: 'ffs_gw' } };
      }
      return undefined;
    });
    renderSignedIn(<OAuthClients />);
    await screen.findByText('No OAuth clients yet.');
    await userEvent.type(screen.getByRole('textbox', { name: 'Client name' }), 'Gateway backend');
    const invoke = screen.getByRole('checkbox', { name: /ai:invoke/ });
    expect(invoke).not.toBeChecked();
    expect(invoke.closest('label')).toHaveTextContent("AI gateway: spends the tenant's credits");
    // Every scope unchecked: the form says why and sends nothing.
    await userEvent.click(screen.getByRole('checkbox', { name: 'flags:read' }));
    await userEvent.click(screen.getByRole('checkbox', { name: 'flags:evaluate' }));
    await userEvent.click(screen.getByRole('button', { name: 'Create client' }));
    await screen.findByText('Choose at least one scope.');
    expect(sent.filter((r) => r.method === 'POST')).toEqual([]);

    await userEvent.click(invoke);
    await userEvent.click(screen.getByRole('button', { name: 'Create client' }));
    await screen.findByRole('region', { name: 'Secret of Gateway backend' });
    expect(sent.find((r) => r.method === 'POST')).toMatchObject({ body: { name: 'Gateway backend', scopes: ['ai:invoke'], productKeys: ['core'] } });
  });

  it('rotating shows the new secret once; a 403 names the role needed and the request id', async () => {
    let rotated = false;
    routeServer((req) => {
      if (req.method === 'GET') return { status: 200, body: [stored] };
      if (req.method === 'POST' && req.url === '/api/oauth/clients/ffc_abc/rotate-secret') {
        if (rotated) return { status: 403, body: { title: 'Role required', status: 403, detail: 'This needs the admin role.', instance: 'req-403' } };
        rotated = true;
        return { status: 200, body: { ...stored, secretRotatedAt: '2026-11-23T00:00:00.000Z', clientSecret: 'ffs_rotated' } };
      }
      return undefined;
    });
    renderSignedIn(<OAuthClients />);
    await userEvent.click(await screen.findByRole('button', { name: 'Rotate secret of Checkout backend' }));
    const secret = await screen.findByRole('region', { name: 'Secret of Checkout backend' });
    expect(within(secret).getByTestId('client-secret')).toHaveTextContent('ffs_rotated');
    await userEvent.click(within(secret).getByRole('button', { name: 'I have stored the secret' }));
    await userEvent.click(screen.getByRole('button', { name: 'Rotate secret of Checkout backend' }));
    const alert = await screen.findByRole('alert');
    expect(alert).toHaveTextContent('Role required');
    expect(alert).toHaveTextContent('This needs the admin role.');
    expect(alert).toHaveTextContent('req-403');
    expect(screen.queryByRole('region', { name: /Secret of/ })).toBeNull();
  });

  it('deletes a client after confirming', async () => {
    let clients = [stored];
    const sent = routeServer((req) => {
      if (req.method === 'GET') return { status: 200, body: clients };
      if (req.method === 'DELETE') {
        clients = [];
        return { status: 204, body: null };
      }
      return undefined;
    });
    renderSignedIn(<OAuthClients />);
    await userEvent.click(await screen.findByRole('button', { name: 'Delete Checkout backend' }));
    const dialog = await screen.findByRole('alertdialog', { name: /Delete Checkout backend\?/ });
    await userEvent.click(within(dialog).getByRole('button', { name: 'Delete client' }));
    await screen.findByText('No OAuth clients yet.');
    await waitFor(() => expect(sent.filter((r) => r.method === 'DELETE').map((r) => r.url)).toEqual(['/api/oauth/clients/ffc_abc']));
  });
});
