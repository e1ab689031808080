import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Flag } from '../../api';
import { aFlag, renderWithQueries, scriptServer } from '../../testing';
import { FlagEditor } from './FlagEditor';

const scope = { token: 'id-token', tenantId: 't-1', environment: 'staging' };
const checkout = aFlag();
const payments = aFlag({
  key: 'payments-v2',
  name: 'Payments v2',
  variations: [
    { id: 'p-on', name: 'on', value: true, description: '', weight: 0 },
    { id: 'p-off', name: 'off', value: false, description: '', weight: 0 },
  ],
});

describe('targets, off value and prerequisites', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('sends individual targets per variation, the off value and a prerequisite on another flag', async () => {
    const sent = scriptServer([{ status: 200, body: [checkout, payments] }, { status: 200, body: aFlag({ version: '3.5' }) }]);
    renderWithQueries(<FlagEditor flag={checkout} scope={scope} />);
    fireEvent.change(screen.getByRole('textbox', { name: 'Targets served true' }), { target: { value: 'alice\nbob, carol\nalice' } });
    await userEvent.click(screen.getByRole('button', { name: /Served when off/ }));
    await userEvent.click(await screen.findByRole('option', { name: 'true (true)' }));
    await waitFor(() => expect(screen.getByRole('button', { name: 'Add prerequisite' })).toBeEnabled());
    await userEvent.click(screen.getByRole('button', { name: 'Add prerequisite' }));
    const prerequisite = screen.getByRole('group', { name: 'Prerequisite 1' });
    await userEvent.click(within(prerequisite).getByRole('button', { name: /Must serve/ }));
    await userEvent.click(await screen.findByRole('option', { name: 'off (false)' }));
    await userEvent.click(screen.getByRole('button', { name: 'Save changes' }));
    await waitFor(() => expect(sent).toHaveLength(2));
    expect(sent[1]!.body).toEqual({
      offValue: true,
      targets: [{ variationId: 'v-true', values: ['alice', 'bob', 'carol'] }],
      prerequisites: [{ key: 'payments-v2', variationId: 'p-off' }],
    });
  }, 30000);

  it('a key targeted twice is a warning; a prerequisite naming a missing variation is an error that blocks the save', async () => {
    const flag: Flag = { ...checkout, targets: [{ variationId: 'v-true', values: ['alice'] }, { variationId: 'v-false', values: ['alice'] }], prerequisites: [{ key: 'payments-v2', variationId: 'gone' }] };
    scriptServer([{ status: 200, body: [flag, payments] }]);
    renderWithQueries(<FlagEditor flag={flag} scope={scope} />);
    const twice = await screen.findByText(/targets\[1\]\.values\[0\]/);
    expect(twice.closest('li')).toHaveClass('problem-warning');
    await waitFor(() => expect(screen.getAllByText(/prerequisites\[0\]/)[0]!.closest('li')).toHaveClass('problem-error'));
    await userEvent.type(screen.getAllByRole('textbox', { name: 'Description' })[0]!, 'x');
    expect(screen.getByRole('button', { name: 'Save changes' })).toBeDisabled();
    expect(screen.getByRole('region', { name: 'Save changes' })).toHaveTextContent('error');
  }, 30000);
});
