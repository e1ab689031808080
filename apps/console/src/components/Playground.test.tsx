import { fireEvent, screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { aFlag, renderWithQueries, scriptServer } from '../testing';
import { Playground } from './Playground';

const scope = { token: 'id-token', tenantId: 't-1', environment: 'staging' };
const flag = aFlag({
  enabled: true,
  rules: [{ id: 'r-no', description: 'Norway', clauses: [{ attribute: 'country', op: 'in', values: ['NO'] }], variationId: 'v-true' }],
});

describe('Playground', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('sends the context to the evaluate endpoint and shows value, reason and the matched rule', async () => {
    const sent = scriptServer([{ status: 200, body: { key: 'new-checkout', enabled: true, value: true, reason: 'RULE_MATCH', variationId: 'v-true', ruleId: 'r-no', ruleIndex: 0 } }]);
    renderWithQueries(<Playground flag={flag} scope={scope} />);
    const key = screen.getByRole('textbox', { name: 'Context key' });
    await userEvent.clear(key);
    await userEvent.type(key, 'user-42');
    fireEvent.change(screen.getByRole('textbox', { name: 'Attributes (JSON)' }), { target: { value: '{"country": "NO", "plan": "pro"}' } });
    await userEvent.click(screen.getByRole('button', { name: 'Evaluate' }));
    await waitFor(() => expect(screen.getByTestId('eval-reason')).toHaveTextContent('RULE_MATCH'));
    expect(sent).toEqual([
      expect.objectContaining({ method: 'POST', url: '/api/flags/new-checkout/evaluate', body: { userId: 'user-42', attributes: { country: 'NO', plan: 'pro' } } }),
    ]);
    expect(sent[0]?.headers['X-Environment']).toBe('staging');
    expect(screen.getByTestId('eval-value')).toHaveTextContent('true');
    expect(screen.getByTestId('eval-rule')).toHaveTextContent('Rule 1: Norway (country in "NO")');
  });

  it('refuses attributes that are not a JSON object, without calling the server', async () => {
    const sent = scriptServer([]);
    renderWithQueries(<Playground flag={flag} scope={scope} />);
    fireEvent.change(screen.getByRole('textbox', { name: 'Attributes (JSON)' }), { target: { value: '{"country": ' } });
    expect(screen.getByRole('button', { name: 'Evaluate' })).toBeDisabled();
    expect(await screen.findByText('Attributes must be valid JSON.')).toBeInTheDocument();
    expect(sent).toHaveLength(0);
  });

  it('shows a 429 with when to retry and the request id', async () => {
    scriptServer([{ status: 429, body: { title: 'Too Many Requests', status: 429, detail: 'Rate limit of 600 per minute reached.', instance: 'req-429' }, headers: { 'Retry-After': '17' } }]);
    renderWithQueries(<Playground flag={flag} scope={scope} />);
    await userEvent.click(screen.getByRole('button', { name: 'Evaluate' }));
    const alert = await screen.findByRole('alert');
    expect(alert).toHaveTextContent('Too Many Requests');
    expect(alert).toHaveTextContent('Try again in 17 seconds');
    expect(alert).toHaveTextContent('req-429');
  });
});
