import { screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { aFlag, renderWithQueries, routeServer, scriptServer } from '../../testing';
import { AuditLog } from './AuditLog';
import { FlagEditor } from './FlagEditor';

const scope = { token: 'id-token', tenantId: 't-1', environment: 'staging' };

describe('flag editor and audit log states', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('a viewer saving sees the problem, the role it needs and the request id; the edit stays', async () => {
    scriptServer([
      { status: 200, body: [aFlag()] },
      { status: 403, body: { title: 'Forbidden', status: 403, detail: 'Your role viewer may not change flags.', instance: 'req-403' } },
    ]);
    renderWithQueries(<FlagEditor flag={aFlag()} scope={scope} />);
    await userEvent.type(screen.getAllByRole('textbox', { name: 'Description' })[0]!, 'x');
    await userEvent.click(screen.getByRole('button', { name: 'Save changes' }));
    const alert = await screen.findByRole('alert');
    expect(alert).toHaveTextContent('Your role viewer may not change flags.');
    expect(alert).toHaveTextContent('Ask an owner or admin of the tenant for the role it needs');
    expect(alert).toHaveTextContent('req-403');
    expect(screen.getByText('Unsaved: Description.')).toBeInTheDocument();
  }, 30000);

  it('a refused save (422) lists the fields the API named', async () => {
    scriptServer([
      { status: 200, body: [aFlag()] },
      { status: 422, body: { title: 'Validation failed', status: 422, detail: 'The request has 1 invalid field: name.', instance: 'req-422', errors: { name: 'must be shorter' } } },
    ]);
    renderWithQueries(<FlagEditor flag={aFlag()} scope={scope} />);
    await userEvent.type(screen.getAllByRole('textbox', { name: 'Name' })[0]!, '!');
    await userEvent.click(screen.getByRole('button', { name: 'Save changes' }));
    expect(await screen.findByRole('alert')).toHaveTextContent('name: must be shorter');
  }, 30000);

  it('the audit log: empty, 429 with the advertised wait, and a 401 ends the session', async () => {
    scriptServer([{ status: 200, body: [] }]);
    const first = renderWithQueries(<AuditLog flagKey="new-checkout" version="1.1" scope={scope} />);
    expect(await screen.findByText('No changes recorded.')).toBeInTheDocument();
    first.unmount();
    vi.unstubAllGlobals();
    // One retry after Retry-After (the console's policy), then the problem; a fake clock running at
    // real speed shows the 1 s wait without spending it.
    const limited = [
      { status: 429, body: { title: 'Too Many Requests', status: 429, detail: 'Rate limit exceeded.', instance: 'req-429' }, headers: { 'Retry-After': '1' } },
      { status: 429, body: { title: 'Too Many Requests', status: 429, detail: 'Rate limit exceeded.', instance: 'req-429b' }, headers: { 'Retry-After': '7' } },
    ];
    const answeredAt: number[] = [];
    routeServer(() => (answeredAt.push(Date.now()), limited.shift()));
    vi.useFakeTimers({ shouldAdvanceTime: true });
    onTestFinished(() => void vi.useRealTimers());
    const second = renderWithQueries(<AuditLog flagKey="new-checkout" version="1.1" scope={scope} />);
    await waitFor(() => expect(answeredAt).toHaveLength(1));
    for (let s = 0; s < 10 && answeredAt.length < 2; s++) await vi.advanceTimersByTimeAsync(250);
    expect(answeredAt[1]! - answeredAt[0]!).toBeGreaterThanOrEqual(1_000);
    const alert = await screen.findByRole('alert');
    vi.useRealTimers();
    expect(alert).toHaveTextContent('Try again in 7 seconds.');
    expect(alert).toHaveTextContent('req-429b');
    second.unmount();
    vi.unstubAllGlobals();
    scriptServer([{ status: 401, body: { title: 'Unauthorized', status: 401 } }]);
    const onUnauthorized = vi.fn();
    renderWithQueries(<AuditLog flagKey="new-checkout" version="1.1" scope={scope} />, onUnauthorized);
    await waitFor(() => expect(onUnauthorized).toHaveBeenCalledTimes(1));
  }, 30000);
});
