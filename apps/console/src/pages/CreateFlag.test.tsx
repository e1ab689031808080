import { fireEvent, screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Router } from 'wouter';
import { memoryLocation } from 'wouter/memory-location';
import { SessionProvider } from '../session';
import { aFlag, renderWithQueries, scriptServer } from '../testing';
import { CreateFlag, parseDefault } from './CreateFlag';

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
    const sent = scriptServer([{ status: 201, body: aFlag({ key: 'max-items', type: 'number', defaultValue: 25 }) }]);
    const location = renderForm();
    await userEvent.type(screen.getByRole('textbox', { name: 'Key' }), 'max-items');
    await userEvent.type(screen.getByRole('textbox', { name: 'Name' }), 'Max items');
    await chooseType('number');
    fireEvent.change(screen.getByRole('textbox', { name: 'Default value' }), { target: { value: '25' } });
    await userEvent.type(screen.getByRole('textbox', { name: 'Tags (comma-separated)' }), 'cart, limits');
    await userEvent.click(screen.getByRole('button', { name: 'Create flag' }));
    await waitFor(() => expect(sent).toHaveLength(1));
    expect(sent[0]).toMatchObject({ method: 'POST', url: '/api/flags', body: { key: 'max-items', name: 'Max items', type: 'number', defaultValue: 25, tags: ['cart', 'limits'] } });
    await waitFor(() => expect(location.history?.at(-1)).toBe('/flags/max-items'));
  });

  it('sends a JSON default as JSON, and shows the API refusing it (a taken key) with the request id', async () => {
    const sent = scriptServer([{ status: 409, body: { title: 'Conflict', status: 409, detail: 'A flag with key "taken" exists.', instance: 'req-409' } }]);
    renderForm();
    await userEvent.type(screen.getByRole('textbox', { name: 'Key' }), 'taken');
    await userEvent.type(screen.getByRole('textbox', { name: 'Name' }), 'Taken');
    await chooseType('json');
    fireEvent.change(screen.getByRole('textbox', { name: 'Default value' }), { target: { value: '{"theme": "dark"}' } });
    await userEvent.click(screen.getByRole('button', { name: 'Create flag' }));
    const alert = await screen.findByRole('alert');
    expect(sent[0]?.body).toMatchObject({ type: 'json', defaultValue: { theme: 'dark' } });
    expect(alert).toHaveTextContent('A flag with key "taken" exists.');
    expect(alert).toHaveTextContent('req-409');
  });
});
