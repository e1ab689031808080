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

/** A user key and attributes typed into the form, then Evaluate. */
async function evaluateUser(contextKey: string, attributes: string) {
  const key = screen.getByRole('textbox', { name: 'Context key' });
  await userEvent.clear(key);
  await userEvent.type(key, contextKey);
  fireEvent.change(screen.getByRole('textbox', { name: 'Attributes (JSON)' }), { target: { value: attributes } });
  await userEvent.click(screen.getByRole('button', { name: 'Evaluate' }));
}

describe('Playground', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('sends the context to the evaluate endpoint and shows value, reason and the matched rule', async () => {
    const sent = scriptServer([{ status: 200, body: { key: 'new-checkout', enabled: true, value: true, reason: 'RULE_MATCH', variationId: 'v-true', ruleId: 'r-no', ruleIndex: 0 } }]);
    renderWithQueries(<Playground flag={flag} scope={scope} />);
    await evaluateUser('user-42', '{"country": "NO", "plan": "pro"}');
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

  it('evaluates a multi-kind context typed as JSON and says which kind matched', async () => {
    const byOrg = aFlag({
      enabled: true,
      rules: [{ id: 'r-ent', description: 'Enterprise', clauses: [{ contextKind: 'organization', attribute: 'plan', op: 'in', values: ['enterprise'] }], variationId: 'v-true' }],
    });
    const sent = scriptServer([{ status: 200, body: { key: 'new-checkout', enabled: true, value: true, reason: 'RULE_MATCH', variationId: 'v-true', ruleId: 'r-ent', ruleIndex: 0 } }]);
    renderWithQueries(<Playground flag={byOrg} scope={scope} />);
    await userEvent.click(screen.getByRole('radio', { name: 'A context as JSON (any kind, multi-kind)' }));
    const box = screen.getByRole('textbox', { name: 'Context (JSON)' });
    expect(screen.getByText('Kinds: user, organization')).toBeInTheDocument();
    const context = { kind: 'multi', user: { key: 'ada' }, organization: { key: 'acme', plan: 'enterprise' } };
    fireEvent.change(box, { target: { value: JSON.stringify(context) } });
    await userEvent.click(screen.getByRole('button', { name: 'Evaluate' }));
    await waitFor(() => expect(screen.getByTestId('eval-kind')).toHaveTextContent('organization (key acme)'));
    // Sent as the body's context: as attributes the route would make it a user context.
    expect(sent[0]?.body).toEqual({ context });
    expect(screen.getByTestId('eval-rule')).toHaveTextContent('Rule 1: Enterprise (organization plan in "enterprise")');
  });

  it('says the kind of a user key and attributes is user, whatever an attribute kind says, as the route does', async () => {
    const targeted = aFlag({ enabled: true, targets: [{ variationId: 'v-false', values: ['acme'], contextKind: 'organization' }, { variationId: 'v-false', values: ['acme'] }] });
    const sent = scriptServer([{ status: 200, body: { key: 'new-checkout', enabled: true, value: false, reason: 'TARGET_MATCH', variationId: 'v-false' } }]);
    renderWithQueries(<Playground flag={targeted} scope={scope} />);
    await evaluateUser('acme', '{"kind": "organization"}');
    await waitFor(() => expect(screen.getByTestId('eval-kind')).toHaveTextContent('user (key acme)'));
    expect(sent[0]?.body).toEqual({ userId: 'acme', attributes: { kind: 'organization' } });
  });

  it("shows the server's refusal of a context at the context field, and clears it when the context is edited", async () => {
    const problem = {
      type: '/problems/invalid-context',
      title: 'The evaluation context is not a valid context',
      status: 400,
      detail: 'The evaluation context is malformed: context a multi-kind context holds at most 100 kinds.',
      instance: 'req-400',
      errors: { context: 'a multi-kind context holds at most 100 kinds' },
    };
    const sent = scriptServer([{ status: 400, body: problem }]);
    renderWithQueries(<Playground flag={flag} scope={scope} />);
    await userEvent.click(screen.getByRole('radio', { name: 'A context as JSON (any kind, multi-kind)' }));
    const box = screen.getByRole('textbox', { name: 'Context (JSON)' });
    await userEvent.click(screen.getByRole('button', { name: 'Evaluate' }));
    await waitFor(() => expect(box).toHaveAttribute('aria-invalid', 'true'));
    expect(box).toHaveAccessibleDescription(expect.stringContaining('context: a multi-kind context holds at most 100 kinds'));
    expect(screen.getByRole('alert')).toHaveTextContent('req-400');
    expect(sent).toHaveLength(1);
    fireEvent.change(box, { target: { value: '{"kind": "organization", "key": "acme"}' } });
    await waitFor(() => expect(box).not.toHaveAttribute('aria-invalid'));
    expect(screen.queryByText(/at most 100 kinds/)).not.toBeInTheDocument();
    expect(screen.queryByRole('alert')).not.toBeInTheDocument();
  });

  it('says which kind a target matched', async () => {
    const targeted = aFlag({ enabled: true, targets: [{ variationId: 'v-false', values: ['acme'], contextKind: 'organization' }] });
    scriptServer([{ status: 200, body: { key: 'new-checkout', enabled: true, value: false, reason: 'TARGET_MATCH', variationId: 'v-false' } }]);
    renderWithQueries(<Playground flag={targeted} scope={scope} />);
    await userEvent.click(screen.getByRole('radio', { name: 'A context as JSON (any kind, multi-kind)' }));
    fireEvent.change(screen.getByRole('textbox', { name: 'Context (JSON)' }), { target: { value: '{"kind": "organization", "key": "acme"}' } });
    await userEvent.click(screen.getByRole('button', { name: 'Evaluate' }));
    await waitFor(() => expect(screen.getByTestId('eval-kind')).toHaveTextContent('organization (key acme)'));
  });

  it('refuses a context LaunchDarkly would refuse, naming what is wrong, without calling the server', async () => {
    const sent = scriptServer([]);
    renderWithQueries(<Playground flag={flag} scope={scope} />);
    await userEvent.click(screen.getByRole('radio', { name: 'A context as JSON (any kind, multi-kind)' }));
    const box = screen.getByRole('textbox', { name: 'Context (JSON)' });
    for (const [context, message] of [
      ['{"kind": "multi", "user": {"key": "a"}, "multi": {"key": "b"}}', 'multi: "multi" is not a context kind.'],
      ['{"kind": "multi", "organization": {"name": "Acme"}}', 'organization.key must be a non-empty string.'],
      ['{"kind": "org anization", "key": "a"}', 'kind: A context kind has only letters, digits, ".", "_" and "-".'],
      ['{"kind": "multi"}', 'A multi-kind context needs at least one kind.'],
      ['{"country": "NO"}', 'key must be a non-empty string.'],
    ]) {
      fireEvent.change(box, { target: { value: context } });
      expect(await screen.findByText(message!)).toBeInTheDocument();
      expect(screen.getByRole('button', { name: 'Evaluate' })).toBeDisabled();
    }
    expect(sent).toHaveLength(0);
  });
});
