import { screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RequestScope } from '../api';
import { useFlag } from '../queries';
import { aFlag, renderWithQueries, scriptServer } from '../testing';
import { FlagSwitch } from './FlagSwitch';

const scope = { token: 'id-token', tenantId: 't-1', environment: 'staging' };

/** The switch as the flag page uses it: fed from the flag's query, which the switch updates. */
function OnFlagPage({ scope }: { scope: RequestScope }) {
  const q = useFlag(scope, 'new-checkout');
  return q.data ? <FlagSwitch flag={q.data} scope={scope} /> : null;
}

describe('FlagSwitch', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('is named after the flag environment and sends PATCH {enabled} with If-Match from the flag ETag', async () => {
    const sent = scriptServer([
      { status: 200, body: aFlag(), headers: { ETag: '"3.4"' } },
      { status: 200, body: aFlag({ enabled: true, version: '3.5' }) },
      { status: 200, body: aFlag({ enabled: false, version: '3.6' }) },
    ]);
    renderWithQueries(<OnFlagPage scope={scope} />);
    const sw = await screen.findByRole('switch', { name: 'Enabled in staging' });
    expect(sw).not.toBeChecked();
    await userEvent.click(sw);
    await waitFor(() => expect(sent).toHaveLength(2));
    expect(sent[1]).toMatchObject({
      method: 'PATCH',
      url: '/api/flags/new-checkout',
      headers: { 'If-Match': '"3.4"', 'X-Environment': 'staging', 'X-Tenant-ID': 't-1', Authorization: 'Bearer id-token' },
      body: { enabled: true },
    });
    await waitFor(() => expect(screen.getByRole('switch', { name: 'Enabled in staging' })).toBeChecked());
    // The next change carries the ETag of the flag the server returned, not the one first read.
    await userEvent.click(screen.getByRole('switch', { name: 'Enabled in staging' }));
    await waitFor(() => expect(sent).toHaveLength(3));
    expect(sent[2]).toMatchObject({ method: 'PATCH', headers: { 'If-Match': '"3.5"' }, body: { enabled: false } });
    await waitFor(() => expect(screen.getByRole('switch', { name: 'Enabled in staging' })).not.toBeChecked());
  });

  it('on 412 says the flag changed elsewhere, with the problem and its request id, and does not claim the change', async () => {
    scriptServer([
      {
        status: 412,
        body: { type: '/problems/flag-changed', title: 'Flag changed', status: 412, detail: 'The flag is at version "4.4"; read it again and retry.', instance: 'req-412' },
      },
    ]);
    renderWithQueries(<FlagSwitch flag={aFlag()} scope={scope} />);
    await userEvent.click(screen.getByRole('switch', { name: 'Enabled in staging' }));
    const alert = await screen.findByRole('alert');
    expect(alert).toHaveTextContent('Flag changed');
    expect(alert).toHaveTextContent('The flag is at version "4.4"');
    expect(alert).toHaveTextContent('changed since this page read it');
    expect(alert).toHaveTextContent('req-412');
    expect(screen.getByRole('switch', { name: 'Enabled in staging' })).not.toBeChecked();
  });

  it('a 401 ends the session', async () => {
    scriptServer([{ status: 401, body: { title: 'Unauthorized', status: 401, detail: 'The token has expired.' } }]);
    const onUnauthorized = vi.fn();
    renderWithQueries(<FlagSwitch flag={aFlag()} scope={scope} />, onUnauthorized);
    await userEvent.click(screen.getByRole('switch', { name: 'Enabled in staging' }));
    await waitFor(() => expect(onUnauthorized).toHaveBeenCalledTimes(1));
  });
});
