import { fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { useState } from 'react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Clause, Rule, Target } from '../../api';
import { aFlag, renderWithQueries, routeServer } from '../../testing';
import { ClauseEditor, type SegmentChoice } from './ClauseEditor';
import { kindsToOffer } from './ContextKindField';
import { FlagEditor } from './FlagEditor';
import { RuleEditor } from './RuleEditor';

const scope = { token: 'id-token', tenantId: 't-1', environment: 'staging' };
const noProblems = { errors: [], warnings: [] };
const kinds = kindsToOffer([]);

async function choose(group: HTMLElement, label: RegExp, option: string) {
  await userEvent.click(within(group).getByRole('button', { name: label }));
  await userEvent.click(await screen.findByRole('option', { name: option }));
}

/** A clause editor over state, recording each clause it hands back. */
function ClauseHarness({ initial, seen, segments }: { initial: Clause; seen: Clause[]; segments?: SegmentChoice[] }) {
  const [c, setC] = useState(initial);
  return (
    <ClauseEditor
      clause={c}
      name="Rule 1 clause 1"
      path="rules[0].clauses[0]"
      check={noProblems}
      kinds={kinds}
      segments={segments}
      onChange={(x) => {
        seen.push(x);
        setC(x);
      }}
      onRemove={() => {}}
    />
  );
}

describe('context kinds and segmentMatch in the flag editor', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('offers user first, then the kinds in use, and never an invalid one', () => {
    expect(kindsToOffer(['team', 'organization', 'bad kind', 'multi', undefined, 'user'])).toEqual(['user', 'organization', 'device', 'team']);
  });

  it('puts a clause on another kind, types a kind that is validated, and goes back to user (absent)', async () => {
    const seen: Clause[] = [];
    render(<ClauseHarness initial={{ attribute: 'plan', op: 'in', values: ['enterprise'] }} seen={seen} />);
    const clause = screen.getByRole('group', { name: 'Rule 1 clause 1' });
    expect(within(clause).getByRole('button', { name: /Context kind/ })).toHaveTextContent('user');
    await choose(clause, /Context kind/, 'organization');
    expect(seen.at(-1)).toEqual({ attribute: 'plan', op: 'in', values: ['enterprise'], contextKind: 'organization' });

    await choose(clause, /Context kind/, 'Other kind…');
    const other = within(clause).getByRole('textbox', { name: 'Context kind: other kind' });
    await userEvent.type(other, 'my kind');
    expect(within(clause).getByText('A context kind has only letters, digits, ".", "_" and "-".')).toBeInTheDocument();
    await userEvent.clear(other);
    await userEvent.type(other, 'multi');
    expect(within(clause).getByText('"multi" is not a context kind.')).toBeInTheDocument();
    await userEvent.clear(other);
    await userEvent.type(other, 'account.v2');
    expect(within(clause).queryByText(/not a context kind|only letters/)).not.toBeInTheDocument();
    expect(seen.at(-1)?.contextKind).toBe('account.v2');

    await choose(clause, /Context kind/, 'user');
    expect(seen.at(-1)).toEqual({ attribute: 'plan', op: 'in', values: ['enterprise'] });
    // A /reference needs a kind to be read as one, so user is then said explicitly.
    fireEvent.change(within(clause).getByRole('textbox', { name: 'Attribute' }), { target: { value: '/address/city' } });
    await choose(clause, /Context kind/, 'organization');
    await choose(clause, /Context kind/, 'user');
    expect(seen.at(-1)).toEqual({ attribute: '/address/city', op: 'in', values: ['enterprise'], contextKind: 'user' });
  });

  it('chooses segmentMatch values from the environment segments, the attribute not asked for', async () => {
    const seen: Clause[] = [];
    render(<ClauseHarness initial={{ attribute: 'key', op: 'in', values: ['x'] }} seen={seen} segments={[{ key: 'beta', name: 'Beta users' }, { key: 'staff', name: 'Staff' }]} />);
    const clause = screen.getByRole('group', { name: 'Rule 1 clause 1' });
    await choose(clause, /Operator/, 'is in segment');
    expect(within(clause).queryByRole('textbox', { name: 'Attribute' })).not.toBeInTheDocument();
    expect(seen.at(-1)).toMatchObject({ op: 'segmentMatch', values: [] });
    await userEvent.click(within(clause).getByRole('checkbox', { name: 'Staff (staff)' }));
    await userEvent.click(within(clause).getByRole('checkbox', { name: 'Beta users (beta)' }));
    expect(seen.at(-1)?.values).toEqual(['staff', 'beta']);
    await userEvent.click(within(clause).getByRole('checkbox', { name: 'Staff (staff)' }));
    expect(seen.at(-1)?.values).toEqual(['beta']);
  });

  it('keeps a segmentMatch value naming a missing segment visible, to untick', () => {
    render(<ClauseHarness initial={{ attribute: '', op: 'segmentMatch', values: ['gone'] }} seen={[]} segments={[]} />);
    expect(screen.getByRole('checkbox', { name: 'gone (no such segment)' })).toBeChecked();
  });

  it('buckets a rule rollout by another kind', async () => {
    const flag = aFlag();
    const seen: Rule[] = [];
    function Harness() {
      const [r, setR] = useState<Rule>({ id: 'r1', clauses: [], rollout: { variations: [{ variationId: 'v-true', weight: 50000 }, { variationId: 'v-false', weight: 50000 }] } });
      return (
        <RuleEditor rule={r} index={0} count={1} variations={flag.variations} check={noProblems} revision={0} kinds={kinds} segments={[]} onMove={() => {}} onRemove={() => {}} onChange={(x) => (seen.push(x), setR(x))} />
      );
    }
    render(<Harness />);
    const rollout = screen.getByRole('group', { name: 'Rule 1 rollout' });
    await choose(rollout, /Bucket by context kind/, 'organization');
    fireEvent.change(within(rollout).getByRole('textbox', { name: 'Bucket by attribute' }), { target: { value: 'region' } });
    expect(seen.at(-1)?.rollout).toEqual({ variations: [{ variationId: 'v-true', weight: 50000 }, { variationId: 'v-false', weight: 50000 }], contextKind: 'organization', bucketBy: 'region' });
    // Weights changed afterwards keep the kind.
    await userEvent.click(within(rollout).getByRole('button', { name: 'Split evenly' }));
    expect(seen.at(-1)?.rollout?.contextKind).toBe('organization');
  });

  it('saves individual targets of another kind after the user targets, and reads the segments only once a clause is by segment', async () => {
    const flag = aFlag({ targets: [{ variationId: 'v-true', values: ['ada'] }, { variationId: 'v-false', values: ['acme'], contextKind: 'organization' }] });
    const sent = routeServer((req) => {
      if (req.method === 'GET' && req.url.startsWith('/api/flags?')) return { status: 200, body: [flag] };
      if (req.method === 'GET' && req.url.startsWith('/api/segments?')) return { status: 200, body: [{ key: 'beta', name: 'Beta users' }] };
      if (req.method === 'PATCH') return { status: 200, body: aFlag({ version: '3.5' }) };
      return undefined;
    });
    renderWithQueries(<FlagEditor flag={flag} scope={scope} />);
    const existing = screen.getByRole('group', { name: 'Kind target 1' });
    expect(within(existing).getByRole('button', { name: /Context kind/ })).toHaveTextContent('organization');
    expect(within(existing).getByRole('textbox', { name: 'Keys' })).toHaveValue('acme');
    await userEvent.click(screen.getByRole('button', { name: 'Add target of another kind' }));
    const added = screen.getByRole('group', { name: 'Kind target 2' });
    await choose(added, /Context kind/, 'device');
    fireEvent.change(within(added).getByRole('textbox', { name: 'Keys' }), { target: { value: 'd-1, d-2' } });
    fireEvent.change(screen.getByRole('textbox', { name: 'Targets served true' }), { target: { value: 'ada\ngrace' } });
    expect(sent.some((r) => r.url.startsWith('/api/segments'))).toBe(false);

    await userEvent.click(screen.getByRole('button', { name: 'Save changes' }));
    await waitFor(() => expect(sent.some((r) => r.method === 'PATCH')).toBe(true));
    const body = sent.find((r) => r.method === 'PATCH')!.body as { targets: Target[] };
    expect(body.targets).toEqual([
      { variationId: 'v-true', values: ['ada', 'grace'] },
      { variationId: 'v-false', values: ['acme'], contextKind: 'organization' },
      { variationId: 'v-true', values: ['d-1', 'd-2'], contextKind: 'device' },
    ]);

    await userEvent.click(screen.getByRole('button', { name: 'Add rule' }));
    await choose(screen.getByRole('group', { name: 'Rule 1 clause 1' }), /Operator/, 'is in segment');
    expect(await screen.findByRole('checkbox', { name: 'Beta users (beta)' })).toBeInTheDocument();
    expect(sent.filter((r) => r.url.startsWith('/api/segments'))).toHaveLength(1);
  });
});
