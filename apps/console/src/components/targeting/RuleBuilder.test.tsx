import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Rule } from '../../api';
import { aFlag, renderWithQueries, scriptServer } from '../../testing';
import { formatClauseValue, OPERATORS, parseClauseValue } from './checks';
import { FlagEditor } from './FlagEditor';

const scope = { token: 'id-token', tenantId: 't-1', environment: 'staging' };
const rule = (id: string, attribute: string, values: Rule['clauses'][0]['values'], over: Partial<Rule> = {}): Rule => ({
  id,
  description: id,
  clauses: [{ attribute, op: 'in', values, negate: false }],
  variationId: 'v-true',
  ...over,
});

async function choose(group: HTMLElement, label: RegExp, option: string) {
  await userEvent.click(within(group).getByRole('button', { name: label }));
  await userEvent.click(await screen.findByRole('option', { name: option }));
}

describe('the rule builder', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('offers every operator of CONTRACT.md sections 5 and 10 and reads values as LaunchDarkly would store them', () => {
    expect(OPERATORS.map((o) => o.op)).toEqual([
      'in', 'startsWith', 'endsWith', 'contains', 'matches', 'lessThan', 'lessThanOrEqual', 'greaterThan', 'greaterThanOrEqual', 'before', 'after', 'semVerEqual', 'semVerLessThan', 'semVerGreaterThan', 'segmentMatch',
    ]);
    expect(parseClauseValue('in', 'NO')).toBe('NO');
    expect(parseClauseValue('in', '42')).toBe(42);
    expect(parseClauseValue('in', '"42"')).toBe('42');
    expect(parseClauseValue('in', 'true')).toBe(true);
    expect(formatClauseValue('in', '42')).toBe('"42"');
    expect(parseClauseValue('lessThan', '2.5')).toBe(2.5);
    expect(parseClauseValue('lessThan', 'ten')).toBe('ten');
    expect(parseClauseValue('before', '1700000000000')).toBe(1700000000000);
    expect(parseClauseValue('before', '2026-01-31T00:00:00Z')).toBe('2026-01-31T00:00:00Z');
    expect(parseClauseValue('startsWith', '42')).toBe('42');
  });

  it('builds a rule with a negated clause, warns about values that can never match, and saves it with If-Match', async () => {
    const flag = aFlag();
    const sent = scriptServer([
      { status: 200, body: [flag] },
      { status: 200, body: aFlag({ version: '3.5' }) },
    ]);
    renderWithQueries(<FlagEditor flag={flag} scope={scope} />);
    await userEvent.click(screen.getByRole('button', { name: 'Add rule' }));
    const clause = screen.getByRole('group', { name: 'Rule 1 clause 1' });
    await userEvent.type(within(clause).getByRole('textbox', { name: 'Attribute' }), 'age');
    await choose(clause, /Operator/, 'greater than (>)');
    fireEvent.change(within(clause).getByRole('textbox', { name: 'Values' }), { target: { value: '18\nadult' } });
    // "adult" is accepted (LaunchDarkly stores it) but can never match a numeric operator.
    expect(await within(clause).findByText(/must be a number for 'greaterThan': this value never matches/)).toBeInTheDocument();
    expect(within(clause).getByText('rules[0].clauses[0].values[1]')).toBeInTheDocument();
    await userEvent.click(within(clause).getByRole('checkbox', { name: 'Not (negate)' }));
    await choose(screen.getByRole('group', { name: 'Rule 1' }), /Rule 1 variation/, 'false (false)');
    expect(screen.getByText(/1 warning: values that never match/)).toBeInTheDocument();

    // Every other operator kind: a bad regex, date and version are warnings too, not refusals.
    for (const [op, value, message] of [
      ['matches regex', '(', 'is not a valid regular expression'],
      ['before (date)', 'yesterday', 'must be epoch milliseconds or an RFC 3339 date-time'],
      ['semver equal', 'v1.2.3', 'must be a semantic version'],
      ['starts with', '42', null],
    ] as const) {
      await choose(clause, /Operator/, op);
      fireEvent.change(within(clause).getByRole('textbox', { name: 'Values' }), { target: { value } });
      if (message) expect(await within(clause).findByText(new RegExp(message))).toBeInTheDocument();
      else await waitFor(() => expect(within(clause).queryByText(/never matches/)).not.toBeInTheDocument());
    }
    await choose(clause, /Operator/, 'greater than (>)');
    fireEvent.change(within(clause).getByRole('textbox', { name: 'Values' }), { target: { value: '18\nadult' } });

    await userEvent.click(screen.getByRole('button', { name: 'Save changes' }));
    await waitFor(() => expect(sent).toHaveLength(2));
    expect(sent[1]).toMatchObject({ method: 'PATCH', url: '/api/flags/new-checkout', headers: { 'If-Match': '"3.4"', 'X-Environment': 'staging' } });
    const body = sent[1]!.body as { rules: Rule[] };
    expect(Object.keys(body)).toEqual(['rules']);
    expect(body.rules).toEqual([{ id: expect.any(String), description: '', clauses: [{ attribute: 'age', op: 'greaterThan', values: [18, 'adult'], negate: true }], variationId: 'v-false' }]);
  }, 30000);

  it('reorders, removes and edits rules, and refuses to save a clause without an attribute', async () => {
    const flag = aFlag({ rules: [rule('first', 'country', ['NO']), rule('second', 'plan', ['pro']), rule('third', 'beta', [true])] });
    const sent = scriptServer([{ status: 200, body: [flag] }, { status: 200, body: aFlag({ version: '3.5' }) }]);
    renderWithQueries(<FlagEditor flag={flag} scope={scope} />);
    await userEvent.click(screen.getByRole('button', { name: 'Move rule 3 up' }));
    expect(screen.getByRole('button', { name: 'Move rule 1 up' })).toBeDisabled();
    await userEvent.click(screen.getByRole('button', { name: 'Move rule 1 down' }));
    await userEvent.click(screen.getByRole('button', { name: 'Remove rule 3' }));
    const descriptions = () => screen.getAllByRole('textbox', { name: 'Description' }).slice(3).map((e) => (e as HTMLInputElement).value);
    // Settings and one per variation (2) come first; then the rules' own descriptions.
    expect(descriptions()).toEqual(['third', 'first']);
    await userEvent.click(screen.getByRole('button', { name: 'Add clause to rule 1' }));
    expect(within(screen.getByRole('group', { name: 'Rule 1 clause 2' })).getByText(/must be an attribute name/)).toBeInTheDocument();
    expect(screen.getByRole('button', { name: 'Save changes' })).toBeDisabled();
    await userEvent.click(screen.getByRole('button', { name: 'Remove rule 1 clause 2' }));
    expect(screen.getByRole('button', { name: 'Save changes' })).toBeEnabled();
    await userEvent.click(screen.getByRole('button', { name: 'Save changes' }));
    await waitFor(() => expect(sent).toHaveLength(2));
    expect((sent[1]!.body as { rules: Rule[] }).rules.map((r) => r.id)).toEqual(['third', 'first']);
  }, 30000);
});
