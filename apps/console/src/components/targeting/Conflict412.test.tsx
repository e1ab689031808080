import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Flag } from '../../api';
import { aFlag, renderWithQueries, scriptServer } from '../../testing';
import { diffJson, rebase, draftOf } from './draft';
import { FlagEditor } from './FlagEditor';

const scope = { token: 'id-token', tenantId: 't-1', environment: 'staging' };
const norway = { id: 'norway', description: 'Norway', clauses: [{ attribute: 'country', op: 'in' as const, values: ['NO'], negate: false }], variationId: 'v-true' };
const mine = aFlag({ version: '3.4', rules: [norway] });
/** Someone else meanwhile: a new description, and Sweden added to the rule's values. */
const theirs: Flag = aFlag({
  version: '3.6',
  description: 'Checkout v2',
  rules: [{ ...norway, clauses: [{ ...norway.clauses[0]!, values: ['NO', 'SE'] }] }],
});
const changed412 = { type: '/problems/flag-changed', title: 'Flag changed', status: 412, detail: 'The flag is at version "3.6"; read it again and retry.', instance: 'req-412' };

describe('saving over a newer version (412)', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('diffs JSON by leaf path and rebases only the fields the user edited', () => {
    expect(diffJson({ a: [1, 2], b: 'x' }, { a: [1, 3, 4] }, 'f')).toEqual([
      { path: 'f.a[1]', from: 2, to: 3 },
      { path: 'f.b', from: 'x' },
      { path: 'f.a[2]', to: 4 },
    ]);
    // An empty list filled (or emptied) is the items, not a removed "[]".
    expect(diffJson([], [{ id: 'r' }], 'rules')).toEqual([{ path: 'rules[0].id', to: 'r' }]);
    expect(diffJson({ t: [1] }, { t: [] })).toEqual([{ path: 't[0]', from: 1 }]);
    const draft = { ...draftOf(mine), name: 'Checkout', description: 'mine' };
    const r = rebase(draftOf(mine), draft, theirs);
    expect(r.draft).toMatchObject({ name: 'Checkout', description: 'mine', rules: theirs.rules });
    expect(r.conflicts).toEqual(['description']);
  });

  it('shows what changed on the server, then reapplies the edit on the new version with its ETag', async () => {
    const sent = scriptServer([
      { status: 200, body: [mine] },
      { status: 412, body: changed412 },
      { status: 200, body: theirs, headers: { ETag: '"3.6"' } },
      { status: 200, body: { ...theirs, name: 'Checkout (new)', version: '3.7' } },
    ]);
    renderWithQueries(<FlagEditor flag={mine} scope={scope} />);
    const name = screen.getAllByRole('textbox', { name: 'Name' })[0]!;
    await userEvent.clear(name);
    await userEvent.type(name, 'Checkout (new)');
    await userEvent.click(screen.getByRole('button', { name: 'Save changes' }));

    const panel = await screen.findByRole('alert');
    expect(sent[1]).toMatchObject({ method: 'PATCH', headers: { 'If-Match': '"3.4"' }, body: { name: 'Checkout (new)' } });
    expect(sent[2]).toMatchObject({ method: 'GET', url: '/api/flags/new-checkout' });
    expect(panel).toHaveTextContent('The flag changed on the server');
    expect(panel).toHaveTextContent('version 3.4 → 3.6');
    const description = within(panel).getByRole('table', { name: 'Description' });
    expect(description).toHaveTextContent('""');
    expect(description).toHaveTextContent('"Checkout v2"');
    const rules = within(panel).getByRole('table', { name: 'Rules' });
    expect(rules).toHaveTextContent('rules[0].clauses[0].values[1]');
    expect(rules).toHaveTextContent('"SE"');
    expect(panel).toHaveTextContent('Your unsaved edits: Name.');
    expect(screen.getByRole('button', { name: 'Save changes' })).toBeDisabled();

    await userEvent.click(within(panel).getByRole('button', { name: 'Reapply my edits on the new version' }));
    expect(screen.queryByRole('alert')).not.toBeInTheDocument();
    // The form now holds the server's version plus the user's edit.
    expect(screen.getAllByRole('textbox', { name: 'Name' })[0]).toHaveValue('Checkout (new)');
    expect(screen.getAllByRole('textbox', { name: 'Description' })[0]).toHaveValue('Checkout v2');
    expect(within(screen.getByRole('group', { name: 'Rule 1 clause 1' })).getByRole('textbox', { name: 'Values' })).toHaveValue('NO\nSE');
    await userEvent.click(screen.getByRole('button', { name: 'Save changes' }));
    await waitFor(() => expect(sent).toHaveLength(4));
    expect(sent[3]).toMatchObject({ method: 'PATCH', headers: { 'If-Match': '"3.6"' }, body: { name: 'Checkout (new)' } });
    expect(Object.keys(sent[3]!.body as object)).toEqual(['name']);
    await screen.findByText('Saved: Name.');
  }, 30000);

  it('can drop the edit and take the server version instead', async () => {
    const sent = scriptServer([
      { status: 200, body: [mine] },
      { status: 412, body: changed412 },
      { status: 200, body: theirs },
    ]);
    renderWithQueries(<FlagEditor flag={mine} scope={scope} />);
    await userEvent.type(screen.getAllByRole('textbox', { name: 'Description' })[0]!, 'mine');
    await userEvent.click(screen.getByRole('button', { name: 'Save changes' }));
    const panel = await screen.findByRole('alert');
    expect(panel).toHaveTextContent('Also changed on the server: Description');
    await userEvent.click(within(panel).getByRole('button', { name: 'Discard my edits' }));
    expect(screen.getAllByRole('textbox', { name: 'Description' })[0]).toHaveValue('Checkout v2');
    expect(screen.getByText('No unsaved changes.')).toBeInTheDocument();
    expect(sent).toHaveLength(3);
  }, 30000);
});
