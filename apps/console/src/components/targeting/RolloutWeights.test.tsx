import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Flag, Rule } from '../../api';
import { aFlag, renderWithQueries, scriptServer } from '../../testing';
import { FlagEditor } from './FlagEditor';
import { evenWeights, normalizeWeights, setWeight, sumWeights, WEIGHT_TOTAL } from './weights';

const scope = { token: 'id-token', tenantId: 't-1', environment: 'staging' };
const threeWay = aFlag({
  type: 'string',
  defaultValue: 'red',
  offValue: null,
  variations: [
    { id: 'v-red', name: 'red', value: 'red', description: '', weight: 0 },
    { id: 'v-green', name: 'green', value: 'green', description: '', weight: 0 },
    { id: 'v-blue', name: 'blue', value: 'blue', description: '', weight: 0 },
  ],
  rules: [{ id: 'r1', description: 'beta', clauses: [{ attribute: 'beta', op: 'in', values: [true] }], variationId: 'v-red' }],
});

/** Type a percentage the way a user does: replace the text, then leave the field (NumberField commits on blur). */
async function setPercent(input: HTMLElement, value: string) {
  await userEvent.clear(input);
  await userEvent.type(input, value);
  fireEvent.blur(input);
}

describe('rollout weights', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('always sum to 100%: a change is taken from the others in proportion, in 0.001% steps', () => {
    expect(evenWeights(3)).toEqual([33334, 33333, 33333]);
    expect(setWeight([50000, 50000], 0, 30)).toEqual([30000, 70000]);
    expect(setWeight([50000, 30000, 20000], 0, 80)).toEqual([80000, 12000, 8000]);
    expect(setWeight([100000, 0, 0], 0, 40)).toEqual([40000, 30000, 30000]);
    expect(setWeight([20000, 80000], 1, 150)).toEqual([0, 100000]);
    expect(setWeight([20000, 80000], 1, 33.3333)).toEqual([66667, 33333]);
    expect(normalizeWeights([1, 3])).toEqual([25000, 75000]);
    expect(normalizeWeights([0, 0])).toEqual([0, 0]);
    for (let p = 0; p <= 100; p += 7.77) expect(sumWeights(setWeight([12345, 54321, 33334], 1, p))).toBe(WEIGHT_TOTAL);
  });

  it('a rule switched to a rollout starts even, follows each edit to 100%, and saves the weights', async () => {
    const sent = scriptServer([
      { status: 200, body: [threeWay] },
      { status: 200, body: { ...threeWay, version: '3.5' } },
    ]);
    renderWithQueries(<FlagEditor flag={threeWay} scope={scope} />);
    const rule = screen.getByRole('group', { name: 'Rule 1' });
    await userEvent.click(within(rule).getByRole('radio', { name: 'A percentage rollout' }));
    const rollout = within(rule).getByRole('group', { name: 'Rule 1 rollout' });
    const red = within(rollout).getByRole('textbox', { name: 'red (%)' });
    const green = within(rollout).getByRole('textbox', { name: 'green (%)' });
    const blue = within(rollout).getByRole('textbox', { name: 'blue (%)' });
    expect([red, green, blue].map((e) => (e as HTMLInputElement).value)).toEqual(['33.334', '33.333', '33.333']);
    await setPercent(red, '50');
    await waitFor(() => expect((green as HTMLInputElement).value).toBe('25'));
    expect((blue as HTMLInputElement).value).toBe('25');
    await setPercent(blue, '40');
    await waitFor(() => expect((red as HTMLInputElement).value).toBe('40'));
    expect((green as HTMLInputElement).value).toBe('20');
    expect(within(rollout).getByText('Total: 100%')).toBeInTheDocument();
    await userEvent.type(within(rollout).getByRole('textbox', { name: 'Bucket by attribute' }), 'orgId');
    await userEvent.click(screen.getByRole('button', { name: 'Save changes' }));
    await waitFor(() => expect(sent).toHaveLength(2));
    const [saved] = (sent[1]!.body as { rules: Rule[] }).rules;
    expect(saved!.variationId).toBeUndefined();
    expect(saved!.rollout).toEqual({
      bucketBy: 'orgId',
      variations: [
        { variationId: 'v-red', weight: 40000 },
        { variationId: 'v-green', weight: 20000 },
        { variationId: 'v-blue', weight: 40000 },
      ],
    });
  }, 30000);

  it('reads relative weights as the percentages they mean, and a 50/50 fallthrough is the variations’ weights', async () => {
    const flag: Flag = {
      ...threeWay,
      rules: [{ id: 'r1', clauses: [], rollout: { variations: [{ variationId: 'v-red', weight: 1 }, { variationId: 'v-blue', weight: 3 }] } }],
    };
    const sent = scriptServer([{ status: 200, body: [flag] }, { status: 200, body: { ...flag, version: '3.5' } }]);
    renderWithQueries(<FlagEditor flag={flag} scope={scope} />);
    const rollout = screen.getByRole('group', { name: 'Rule 1 rollout' });
    expect(within(rollout).getByRole('textbox', { name: 'red (%)' })).toHaveValue('25');
    expect(within(rollout).getByRole('textbox', { name: 'green (%)' })).toHaveValue('0');
    expect(within(rollout).getByRole('textbox', { name: 'blue (%)' })).toHaveValue('75');
    await userEvent.click(within(screen.getByRole('radiogroup', { name: 'Fallthrough serves' })).getByRole('radio', { name: 'A percentage rollout' }));
    const fall = screen.getByRole('group', { name: 'Fallthrough rollout' });
    await userEvent.click(within(fall).getByRole('button', { name: 'Split evenly' }));
    await setPercent(within(fall).getByRole('textbox', { name: 'green (%)' }), '0');
    await setPercent(within(fall).getByRole('textbox', { name: 'red (%)' }), '50');
    await waitFor(() => expect(within(fall).getByRole('textbox', { name: 'blue (%)' })).toHaveValue('50'));
    await userEvent.click(screen.getByRole('button', { name: 'Save changes' }));
    await waitFor(() => expect(sent).toHaveLength(2));
    const body = sent[1]!.body as Partial<Flag>;
    expect(Object.keys(body)).toEqual(['variations']);
    expect(body.variations!.map((v) => v.weight)).toEqual([50000, 0, 50000]);
  }, 30000);
});
