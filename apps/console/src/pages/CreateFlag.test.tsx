import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Router } from 'wouter';
import { memoryLocation } from 'wouter/memory-location';
import { SessionProvider } from '../session';
import { aFlag, renderWithQueries, scriptServer } from '../testing';
import { CreateFlag, parseDefault } from './CreateFlag';

const NO_PROJECTS = { status: 200, body: [] };
const session = { token: 'id-token', email: 'ada@example.com', tenants: [], tenantId: 't-1', environment: 'production' };

function renderForm() {
  const location = memoryLocation({ path: '/flags/new', record: true });
  renderWithQueries(
    <SessionProvider initial={session}>
      <Router hook={location.hook}>
        <CreateFlag />
      </Router>
    </SessionProvider>,
  );
  return location;
}

async function chooseType(type: string) {
  await userEvent.click(screen.getByRole('button', { name: /Type/ }));
  await userEvent.click(await screen.findByRole('option', { name: type }));
}

describe('CreateFlag', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('parses a default value of each of the four types, and refuses one that does not fit', () => {
    expect(parseDefault('boolean', '', true)).toEqual({ value: true });
    expect(parseDefault('string', 'blue', false)).toEqual({ value: 'blue' });
    expect(parseDefault('number', '2.5', false)).toEqual({ value: 2.5 });
    expect(parseDefault('number', 'two', false)).toEqual({ error: 'Enter a number.' });
    expect(parseDefault('json', '{"a": [1]}', false)).toEqual({ value: { a: [1] } });
    expect(parseDefault('json', '"text"', false)).toEqual({ error: 'Enter a JSON object or array.' });
    expect(parseDefault('json', '{', false)).toEqual({ error: 'Enter valid JSON.' });
  });

  it('creates a number flag with its typed default and opens it', async () => {
    const sent = scriptServer([NO_PROJECTS, { status: 201, body: aFlag({ key: 'max-items', type: 'number', defaultValue: 25 }) }]);
    const location = renderForm();
    await userEvent.type(screen.getByRole('textbox', { name: 'Key' }), 'max-items');
    await userEvent.type(screen.getByRole('textbox', { name: 'Name' }), 'Max items');
    await chooseType('number');
    fireEvent.change(screen.getByRole('textbox', { name: 'Default value' }), { target: { value: '25' } });
    await userEvent.type(screen.getByRole('textbox', { name: 'Tags (comma-separated)' }), 'cart, limits');
    await userEvent.click(screen.getByRole('button', { name: 'Create flag' }));
    await waitFor(() => expect(sent).toHaveLength(2));
    expect(sent[1]).toMatchObject({ method: 'POST', url: '/api/flags', body: { key: 'max-items', name: 'Max items', type: 'number', defaultValue: 25, tags: ['cart', 'limits'] } });
    await waitFor(() => expect(location.history?.at(-1)).toBe('/flags/max-items'));
  }, 30000);

  it('sends a JSON default as JSON, and shows the API refusing it (a taken key) with the request id', async () => {
    const sent = scriptServer([NO_PROJECTS, { status: 409, body: { title: 'Conflict', status: 409, detail: 'A flag with key "taken" exists.', instance: 'req-409' } }]);
    renderForm();
    await userEvent.type(screen.getByRole('textbox', { name: 'Key' }), 'taken');
    await userEvent.type(screen.getByRole('textbox', { name: 'Name' }), 'Taken');
    await chooseType('json');
    fireEvent.change(screen.getByRole('textbox', { name: 'Default value' }), { target: { value: '{"theme": "dark"}' } });
    await userEvent.click(screen.getByRole('button', { name: 'Create flag' }));
    const alert = await screen.findByRole('alert');
    expect(sent[1]?.body).toMatchObject({ type: 'json', defaultValue: { theme: 'dark' } });
    expect(alert).toHaveTextContent('A flag with key "taken" exists.');
    expect(alert).toHaveTextContent('req-409');
  }, 30000);

  it('creates a string flag with its variations in a project', async () => {
    const project = { id: '6f1c2a4e-0000-4000-8000-000000000001', name: 'Storefront', description: '', color: '#336699', flagCount: 0, createdAt: '', updatedAt: '' };
    const sent = scriptServer([{ status: 200, body: [project] }, { status: 201, body: aFlag({ key: 'theme', type: 'string', defaultValue: 'light' }) }]);
    renderForm();
    await userEvent.type(screen.getByRole('textbox', { name: 'Key' }), 'theme');
    await userEvent.type(screen.getByRole('textbox', { name: 'Name' }), 'Theme');
    await chooseType('string');
    fireEvent.change(screen.getByRole('textbox', { name: 'Default value' }), { target: { value: 'light' } });
    await userEvent.click(screen.getByRole('button', { name: /Project/ }));
    await userEvent.click(await screen.findByRole('option', { name: 'Storefront' }));
    for (const value of ['light', 'dark']) {
      await userEvent.click(screen.getByRole('button', { name: 'Add variation' }));
      const row = screen.getAllByRole('group', { name: /^Variation \d$/ }).at(-1)!;
      fireEvent.change(within(row).getByRole('textbox', { name: 'Value' }), { target: { value } });
      fireEvent.change(within(row).getByRole('textbox', { name: 'Name' }), { target: { value: value.toUpperCase() } });
    }
    await userEvent.click(screen.getByRole('button', { name: 'Create flag' }));
    await waitFor(() => expect(sent).toHaveLength(2));
    expect(sent[1]?.body).toMatchObject({
      type: 'string',
      projectId: project.id,
      flag_variations: [
        { name: 'LIGHT', value: 'light' },
        { name: 'DARK', value: 'dark' },
      ],
    });
  }, 30000);
});
