import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Router } from 'wouter';
import { memoryLocation } from 'wouter/memory-location';
import { Flags } from '../../pages/Flags';
import { SessionProvider } from '../../session';
import { aFlag, renderWithQueries, scriptServer } from '../../testing';
import { FlagEditor } from './FlagEditor';

const scope = { token: 'id-token', tenantId: 't-1', environment: 'staging' };

describe('client-side availability', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('the flag page shows what the flag has and saves a change in one PATCH with If-Match', async () => {
    const flag = aFlag({ clientSideAvailability: { usingEnvironmentId: false, usingMobileKey: true } });
    const sent = scriptServer([
      { status: 200, body: [flag] },
      { status: 200, body: aFlag({ version: '4.4', clientSideAvailability: { usingEnvironmentId: true, usingMobileKey: true } }) },
    ]);
    renderWithQueries(<FlagEditor flag={flag} scope={scope} />);
    const group = screen.getByRole('group', { name: 'Available to client-side keys' });
    const browser = within(group).getByRole('checkbox', { name: 'Browser keys (client-side ID)' });
    expect(browser).not.toBeChecked();
    expect(within(group).getByRole('checkbox', { name: 'Mobile keys' })).toBeChecked();
    expect(group).toHaveTextContent('every visitor of your app');

    await userEvent.click(browser);
    expect(screen.getByRole('region', { name: 'Save changes' })).toHaveTextContent('Unsaved: Client-side availability.');
    await userEvent.click(screen.getByRole('button', { name: 'Save changes' }));
    await waitFor(() => expect(sent).toHaveLength(2));
    expect(sent[1]).toMatchObject({ method: 'PATCH', headers: expect.objectContaining({ 'If-Match': '"3.4"' }) });
    expect(sent[1]!.body).toEqual({ clientSideAvailability: { usingEnvironmentId: true, usingMobileKey: true } });
    expect(await screen.findByText('Saved: Client-side availability.')).toBeInTheDocument();
  }, 30000);

  it('a server-only flag says so; unticking the last key makes it server-only again', async () => {
    const flag = aFlag({ clientSideAvailability: { usingEnvironmentId: true, usingMobileKey: false } });
    const sent = scriptServer([{ status: 200, body: [flag] }, { status: 200, body: aFlag({ version: '3.5' }) }]);
    renderWithQueries(<FlagEditor flag={flag} scope={scope} />);
    const group = screen.getByRole('group', { name: 'Available to client-side keys' });
    await userEvent.click(within(group).getByRole('checkbox', { name: 'Browser keys (client-side ID)' }));
    expect(group).toHaveTextContent('Server-only: only the server token evaluates it');
    await userEvent.click(screen.getByRole('button', { name: 'Save changes' }));
    await waitFor(() => expect(sent).toHaveLength(2));
    expect(sent[1]!.body).toEqual({ clientSideAvailability: { usingEnvironmentId: false, usingMobileKey: false } });
  }, 30000);

  it('the flags list marks the flags client-side keys evaluate', async () => {
    scriptServer([
      {
        status: 200,
        body: [
          aFlag({ key: 'banner', name: 'Banner', clientSideAvailability: { usingEnvironmentId: true, usingMobileKey: true } }),
          aFlag({ key: 'pricing', name: 'Pricing' }),
        ],
      },
    ]);
    renderWithQueries(
      <SessionProvider initial={{ token: 'id-token', email: 'ada@example.com', tenants: [], tenantId: 't-1', environment: 'production' }}>
        <Router hook={memoryLocation({ path: '/' }).hook}>
          <Flags />
        </Router>
      </SessionProvider>,
    );
    const rows = within(await screen.findByRole('table', { name: 'Flags in production' })).getAllByRole('row').slice(1);
    expect(rows.map((r) => within(r).getAllByRole('cell')[0]!.textContent)).toEqual(['Bannerbanner · client-side: browser, mobile', 'Pricingpricing']);
  }, 30000);
});
