import { fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Segment } from '../api';
import { fromKeysByKind, keysByKind, percentToWeight, weightToPercent } from '../components/segments/segment-draft';
import { renderSignedIn, routeServer, SIGNED_IN, type Answer, type Sent } from '../testing';
import { QueryClientProvider } from '@tanstack/react-query';
import { createQueryClient } from '../App';
import { SessionProvider } from '../session';
import { SegmentDetail, Segments } from './Segments';

const aSegment = (over: Partial<Segment> = {}): Segment => ({
  key: 'beta',
  name: 'Beta customers',
  description: '',
  environment: 'production',
  included: ['ada'],
  excluded: [],
  includedContexts: [{ contextKind: 'organization', values: ['acme', 'globex'] }],
  excludedContexts: [],
  rules: [{ id: 'r1', clauses: [{ attribute: 'plan', op: 'in', values: ['pro'] }] }],
  salt: null,
  version: 3,
  createdAt: '2026-11-28T10:00:00.000Z',
  updatedAt: '2026-11-28T10:00:00.000Z',
  warnings: [],
  ...over,
});

/** The segment's page with scripted answers to PATCH and DELETE (the reads answered from `current`). */
function serve(current: () => Segment, writes: (req: Sent) => Answer | undefined) {
  return routeServer((req) => {
    if (req.method === 'GET' && req.url === '/api/segments/beta') return { status: 200, body: current(), headers: { ETag: `"${current().version}"` } };
    if (req.method === 'GET' && req.url.startsWith('/api/segments?')) return { status: 200, body: [current()] };
    return writes(req);
  });
}

describe('segments', () => {
  afterEach(() => {
    vi.unstubAllGlobals();
    window.history.replaceState(null, '', '/');
  });

  it('shows a weight as a percentage of LaunchDarkly’s 0-100000', () => {
    expect(weightToPercent(25_000)).toBe(25);
    expect(weightToPercent(12_345)).toBe(12.345);
    expect(percentToWeight(12.3456)).toBe(12_346);
    expect(percentToWeight(140)).toBe(100_000);
  });

  it('reads keys per kind into one row per kind and back, a second user row joining the user keys', () => {
    const rows = keysByKind(aSegment({ includedContexts: [{ contextKind: 'organization', values: ['acme'] }, { contextKind: 'organization', values: ['globex'] }], excludedContexts: [{ contextKind: 'device', values: ['d1'] }] }));
    expect(rows).toEqual([
      { kind: 'user', included: ['ada'], excluded: [] },
      { kind: 'organization', included: ['acme', 'globex'], excluded: [] },
      { kind: 'device', included: [], excluded: ['d1'] },
    ]);
    expect(fromKeysByKind([...rows, { kind: 'user', included: ['bob', 'ada'], excluded: ['eve'] }, { kind: 'team', included: [], excluded: [] }])).toEqual({
      included: ['ada', 'bob'],
      excluded: ['eve'],
      includedContexts: [{ contextKind: 'organization', values: ['acme', 'globex'] }],
      excludedContexts: [{ contextKind: 'device', values: ['d1'] }],
    });
  });

  it('lists key, name and the counts of included and excluded keys (every kind) and rules, and creates one', async () => {
    const sent = routeServer((req) => {
      if (req.method === 'GET') return { status: 200, body: [aSegment({ excludedContexts: [{ contextKind: 'device', values: ['d1'] }], excluded: ['bob', 'eve'] })] };
      if (req.method === 'POST') return { status: 201, body: aSegment({ key: 'staff', name: 'Staff', included: [], includedContexts: [], rules: [] }), headers: { ETag: '"1"' } };
      return undefined;
    });
    renderSignedIn(<Segments />);
    const row = (await screen.findByRole('link', { name: 'Beta customers' })).closest('tr')!;
    expect([...row.querySelectorAll('td')].map((td) => td.textContent)).toEqual(['Beta customersbeta', '3', '3', '1']);
    await userEvent.type(screen.getByRole('textbox', { name: /^Key/ }), 'staff');
    await userEvent.type(screen.getByRole('textbox', { name: /^Name/ }), 'Staff');
    await userEvent.click(screen.getByRole('button', { name: 'Create segment' }));
    await waitFor(() => expect(window.location.pathname).toBe('/segments/staff'));
    expect(sent.find((r) => r.method === 'POST')).toMatchObject({ url: '/api/segments', headers: { 'X-Environment': 'production' }, body: { key: 'staff', name: 'Staff', description: '' } });
  });

  it('edits name, keys per kind and a weighted rule, and saves the changed fields with If-Match', async () => {
    let seg = aSegment();
    const sent = serve(
      () => seg,
      (req) => {
        if (req.method !== 'PATCH') return undefined;
        seg = { ...seg, ...(req.body as Partial<Segment>), version: 4 };
        return { status: 200, body: seg, headers: { ETag: '"4"' } };
      },
    );
    renderSignedIn(<SegmentDetail segmentKey="beta" />);
    const name = await screen.findByRole('textbox', { name: /^Name/ });
    await userEvent.clear(name);
    await userEvent.type(name, 'Beta accounts');
    const org = screen.getByRole('group', { name: 'Keys of kind organization' });
    expect(within(org).getByRole('textbox', { name: 'Included organization keys' })).toHaveValue('acme\nglobex');
    fireEvent.change(within(org).getByRole('textbox', { name: 'Excluded organization keys' }), { target: { value: 'initech' } });
    fireEvent.change(screen.getByRole('textbox', { name: 'Excluded user keys' }), { target: { value: 'mallory' } });
    await userEvent.click(screen.getByRole('button', { name: 'Add keys of another kind' }));
    const added = screen.getByRole('group', { name: 'Keys of kind device' });
    fireEvent.change(within(added).getByRole('textbox', { name: 'Included device keys' }), { target: { value: 'd-1,d-2' } });

    const rule = screen.getByRole('group', { name: 'Segment rule 1' });
    await userEvent.click(within(rule).getByRole('checkbox', { name: 'Only a percentage of the contexts it matches' }));
    const pct = within(rule).getByRole('textbox', { name: 'Rule 1 includes (%)' });
    await userEvent.clear(pct);
    await userEvent.type(pct, '25.5');
    fireEvent.blur(pct);
    await userEvent.click(screen.getByRole('button', { name: 'Add rule' }));
    fireEvent.change(within(screen.getByRole('group', { name: 'Rule 2 clause 1' })).getByRole('textbox', { name: 'Attribute' }), { target: { value: 'country' } });
    fireEvent.change(within(screen.getByRole('group', { name: 'Rule 2 clause 1' })).getByRole('textbox', { name: 'Values' }), { target: { value: 'NO' } });

    await userEvent.click(screen.getByRole('button', { name: 'Save changes' }));
    await waitFor(() => expect(screen.getByText(/^Saved: /)).toBeInTheDocument());
    const patch = sent.find((r) => r.method === 'PATCH')!;
    expect(patch).toMatchObject({ url: '/api/segments/beta', headers: { 'If-Match': '"3"', 'X-Environment': 'production' } });
    expect(patch.body).toEqual({
      name: 'Beta accounts',
      excluded: ['mallory'],
      includedContexts: [
        { contextKind: 'organization', values: ['acme', 'globex'] },
        { contextKind: 'device', values: ['d-1', 'd-2'] },
      ],
      excludedContexts: [{ contextKind: 'organization', values: ['initech'] }],
      rules: [
        { id: 'r1', clauses: [{ attribute: 'plan', op: 'in', values: ['pro'] }], weight: 25_500 },
        { id: expect.any(String), clauses: [{ attribute: 'country', op: 'in', values: ['NO'], negate: false }] },
      ],
    });
    expect(screen.getByRole('button', { name: 'Save changes' })).toBeDisabled();
  });

  it('on a 412 shows what changed on the server and reapplies the edits on its version', async () => {
    let seg = aSegment();
    const sent = serve(
      () => seg,
      (req) => {
        if (req.method !== 'PATCH') return undefined;
        if (req.headers['If-Match'] === '"3"') {
          seg = aSegment({ description: 'Changed by Grace', version: 5 });
          return { status: 412, body: { title: 'The segment changed since it was read', status: 412 } };
        }
        return { status: 200, body: { ...seg, ...(req.body as object), version: 6 }, headers: { ETag: '"6"' } };
      },
    );
    renderSignedIn(<SegmentDetail segmentKey="beta" />);
    const name = await screen.findByRole('textbox', { name: /^Name/ });
    await userEvent.clear(name);
    await userEvent.type(name, 'Mine');
    await userEvent.click(screen.getByRole('button', { name: 'Save changes' }));
    const panel = await screen.findByRole('alert', { name: 'The segment changed on the server' });
    expect(within(panel).getByText(/version 3 → 5/)).toBeInTheDocument();
    expect(within(panel).getByText('"Changed by Grace"')).toBeInTheDocument();
    await userEvent.click(within(panel).getByRole('button', { name: 'Reapply my edits on the new version' }));
    await userEvent.click(screen.getByRole('button', { name: 'Save changes' }));
    await waitFor(() => expect(sent.filter((r) => r.method === 'PATCH')).toHaveLength(2));
    expect(sent.filter((r) => r.method === 'PATCH')[1]).toMatchObject({ headers: { 'If-Match': '"5"' }, body: { name: 'Mine' } });
  });

  it('shows a 422 by path, and a refused delete naming the flags that use the segment', async () => {
    serve(
      () => aSegment({ warnings: [{ path: 'rules[0].clauses[0].values[0]', message: 'is not a number' }] }),
      (req) => {
        if (req.method === 'PATCH') return { status: 422, body: { title: 'Validation failed', status: 422, errors: { 'rules[0].clauses[0].values': 'at most 1000 values' } } };
        if (req.method === 'DELETE')
          return { status: 409, body: { title: 'Flags or segments use this segment', status: 409, detail: 'flags new-checkout use segment beta', flags: ['new-checkout', 'dark-mode'], segments: [] } };
        return undefined;
      },
    );
    renderSignedIn(<SegmentDetail segmentKey="beta" />);
    fireEvent.change(await screen.findByRole('textbox', { name: 'Included user keys' }), { target: { value: 'ada\nbob' } });
    // What the server stored but says never matches is shown as saved.
    expect(screen.getByRole('region', { name: 'Warnings on the saved segment' })).toHaveTextContent('rules[0].clauses[0].values[0]: is not a number');
    await userEvent.click(screen.getByRole('button', { name: 'Save changes' }));
    const problems = await screen.findByRole('list', { name: 'Problems the server found' });
    expect(problems).toHaveTextContent('rules[0].clauses[0].values at most 1000 values');

    await userEvent.click(screen.getByRole('button', { name: 'Delete segment beta' }));
    await userEvent.click(await screen.findByRole('button', { name: 'Delete segment' }));
    expect(await screen.findByText('This segment is in use')).toBeInTheDocument();
    expect(screen.getByRole('link', { name: 'new-checkout' })).toHaveAttribute('href', '/console/flags/new-checkout');
    expect(screen.getByRole('link', { name: 'dark-mode' })).toBeInTheDocument();
  });

  it('is read only for a viewer: no create form, no save or delete, fields disabled', async () => {
    const sent = serve(
      () => aSegment(),
      () => undefined,
    );
    const viewer = { ...SIGNED_IN, tenants: [{ tenant_id: 't-1', tenant_name: 'Ada', role: 'viewer' }] };
    render(
      <QueryClientProvider client={createQueryClient(() => {})}>
        <SessionProvider initial={viewer}>
          <Segments />
          <SegmentDetail segmentKey="beta" />
        </SessionProvider>
      </QueryClientProvider>,
    );
    expect(await screen.findByRole('textbox', { name: 'Included user keys' })).toBeDisabled();
    expect(screen.getAllByText('Viewers can read segments, not change them.')).toHaveLength(2);
    expect(screen.queryByRole('button', { name: 'Create segment' })).not.toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Save changes' })).not.toBeInTheDocument();
    expect(screen.queryByRole('button', { name: /Delete segment/ })).not.toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Add rule' })).not.toBeInTheDocument();
    expect(sent.every((r) => r.method === 'GET')).toBe(true);
  });
});
