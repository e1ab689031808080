import { screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { useSession } from '../session';
import type { Invitation } from '../tenant-queries';
import { renderSignedIn, routeServer } from '../testing';
import { Team } from '../pages/Team';
import { PendingInvitations } from './Invitations';

const invitation = (over: Partial<Invitation> = {}): Invitation => ({
  id: 'inv-1',
  tenantId: 't-acme',
  tenantName: 'Acme',
  email: 'ada@flagship.test',
  role: 'editor',
  status: 'pending',
  createdAt: '2026-11-25T10:00:00.000Z',
  expiresAt: '2026-12-09T10:00:00.000Z',
  respondedAt: null,
  ...over,
});

/** The session's tenants as the tenant switcher sees them. */
function SwitcherTenants() {
  const { session } = useSession();
  return <output aria-label="Tenants">{session?.tenants.map((t) => `${t.tenant_name}:${t.role}`).join(',')}</output>;
}

describe('invitations', () => {
  afterEach(() => vi.unstubAllGlobals());

  it("lists the user's pending invitations; accepting joins the tenant (added to the switcher, the active tenant unchanged), declining drops it", async () => {
    let pending = [invitation(), invitation({ id: 'inv-2', tenantId: 't-other', tenantName: 'Other Co', role: 'viewer' })];
    const sent = routeServer((req) => {
      if (req.method === 'GET' && req.url === '/api/invitations') return { status: 200, body: pending };
      if (req.method === 'GET' && req.url === '/api/tenants') return { status: 200, body: [] };
      const m = /^\/api\/invitations\/(inv-\d)\/(accept|decline)$/.exec(req.url);
      if (req.method === 'POST' && m) {
        const inv = pending.find((i) => i.id === m[1])!;
        pending = pending.filter((i) => i.id !== m[1]);
        return { status: 200, body: { ...inv, status: m[2] === 'accept' ? 'accepted' : 'declined', respondedAt: '2026-11-25T11:00:00.000Z' } };
      }
      return undefined;
    });
    renderSignedIn(
      <>
        <PendingInvitations />
        <SwitcherTenants />
      </>,
    );
    const region = await screen.findByRole('region', { name: 'Invitations' });
    expect(within(region).getByText('Acme')).toBeInTheDocument();
    expect(within(region).getByText('Other Co')).toBeInTheDocument();

    await userEvent.click(within(region).getByRole('button', { name: 'Accept the invitation to Acme' }));
    expect(await within(region).findByRole('status')).toHaveTextContent('You joined Acme');
    expect(screen.getByRole('status', { name: 'Tenants' })).toHaveTextContent('Ada:admin,Acme:editor');
    expect(sessionStorage.getItem('flagship.console.session')).toContain('"tenantId":"t-1"');
    const accept = sent.find((r) => r.method === 'POST' && r.url === '/api/invitations/inv-1/accept')!;
    // Answering an invitation is the user's own business: no tenant header.
    expect(accept.headers).toMatchObject({ Authorization: 'Bearer id-token' });
    expect(accept.headers['X-Tenant-ID']).toBeUndefined();

    await userEvent.click(await within(region).findByRole('button', { name: 'Decline the invitation to Other Co' }));
    await vi.waitFor(() => expect(within(region).queryByText('Other Co')).toBeNull());
    expect(screen.getByRole('status', { name: 'Tenants' })).toHaveTextContent('Ada:admin,Acme:editor');
    expect(sent.some((r) => r.url === '/api/invitations/inv-2/decline')).toBe(true);
  });

  it('shows nothing without invitations, nor when the identity provider has not verified the e-mail (403)', async () => {
    routeServer((req) =>
      req.url === '/api/invitations'
        ? { status: 403, body: { type: '/problems/email-not-verified', title: 'E-mail address not verified', status: 403, detail: 'verify it', instance: 'r-1' } }
        : undefined,
    );
    const { container } = renderSignedIn(<PendingInvitations />);
    await new Promise((r) => setTimeout(r, 50));
    expect(container).toBeEmptyDOMElement();
  });

  it('the Team page invites by e-mail (a pending invitation, no member added) and lists pending invitations with Withdraw', async () => {
    let pending: Invitation[] = [];
    const sent = routeServer((req) => {
      if (req.method === 'GET' && req.url.startsWith('/api/tenants/t-1/users')) {
        return { status: 200, body: [{ userId: 'u-1', email: 'ada@flagship.test', displayName: 'Ada', role: 'admin', status: 'active', lastAccessedAt: null, createdAt: '2026-11-20T10:00:00.000Z' }] };
      }
      if (req.method === 'GET' && req.url === '/api/tenants/t-1/invitations') return { status: 200, body: pending };
      if (req.method === 'POST' && req.url === '/api/tenants/t-1/users') {
        const inv = invitation({ id: 'inv-9', tenantId: 't-1', tenantName: 'Ada', email: 'grace@flagship.test', role: 'viewer' });
        pending = [inv];
        return { status: 201, body: inv };
      }
      if (req.method === 'DELETE' && req.url === '/api/tenants/t-1/invitations/inv-9') {
        pending = [];
        return { status: 204, body: null };
      }
      return undefined;
    });
    renderSignedIn(<Team />);
    await screen.findByText('Ada');
    await userEvent.type(screen.getByRole('textbox', { name: 'Member email' }), 'grace@flagship.test');
    await userEvent.click(screen.getByRole('button', { name: 'Invite member' }));
    expect(await screen.findByText('Invited grace@flagship.test as viewer.')).toBeInTheDocument();
    expect(sent.find((r) => r.method === 'POST')).toMatchObject({ url: '/api/tenants/t-1/users', body: { email: 'grace@flagship.test', role: 'viewer' } });
    await userEvent.click(await screen.findByRole('button', { name: 'Withdraw the invitation of grace@flagship.test' }));
    await userEvent.click(await screen.findByRole('button', { name: 'Withdraw invitation' }));
    await vi.waitFor(() => expect(sent.some((r) => r.method === 'DELETE')).toBe(true));
    await vi.waitFor(() => expect(screen.queryByRole('button', { name: 'Withdraw the invitation of grace@flagship.test' })).toBeNull());
  });
});
