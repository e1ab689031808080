import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Button, FieldError, Form, Input, Label, TextField } from 'react-aria-components';
import { request } from '../api';
import { useReadOnly } from '../read-only';
import { useSignedIn } from '../session';
import { type Budget, credits, useBudgets, useOAuthClients } from '../tenant-queries';
import { ChoiceSelect } from './ChoiceSelect';
import { ErrorState, Loading } from './States';

type Kind = Budget['kind'];

const KINDS: readonly { id: Kind; name: string }[] = [
  { id: 'client', name: 'An OAuth client' },
  { id: 'product', name: 'A product key' },
];

/** Credits as typed (up to 6 decimals) to micro-credits; undefined when not an amount. */
function toMicro(v: string): number | undefined {
  const n = Number(v.trim());
  if (v.trim() === '' || !Number.isFinite(n) || n < 0 || n > 9_000_000_000) return undefined;
  return Math.round(n * 1_000_000);
}

const path = (kind: Kind, id: string) => `/api/billing/budgets/${kind}/${encodeURIComponent(id)}`;

/**
 * The billing page's budgets: a monthly cap (in credits, stored in micro-credits) per OAuth client or
 * product key, with what this month (UTC) spent and holds under each; the gateway refuses a request its
 * budget does not cover (402 budget_exceeded).
 */
export function Budgets() {
  const { scope } = useSignedIn();
  const readOnly = useReadOnly();
  const tenantScope = { ...scope, environment: undefined };
  const budgets = useBudgets(scope);
  const clients = useOAuthClients(scope);
  const queries = useQueryClient();
  const [kind, setKind] = useState<Kind>('client');
  const [clientId, setClientId] = useState('');
  const [productKey, setProductKey] = useState('core');
  const [cap, setCap] = useState('');
  const clientOptions = (clients.data ?? []).map((c) => ({ id: c.clientId, name: `${c.name} (${c.clientId})` }));
  const chosenClient = clientId || clientOptions[0]?.id || '';
  const scopeId = kind === 'client' ? chosenClient : productKey.trim();
  const nameOf = (b: Budget) => {
    if (b.kind === 'product') return `Product key ${b.id}`;
    const client = clients.data?.find((c) => c.clientId === b.id);
    return `OAuth client ${client ? `${client.name} (${b.id})` : b.id}`;
  };
  const refresh = () => void queries.invalidateQueries({ queryKey: ['budgets', scope.tenantId] });
  const save = useMutation({
    mutationFn: async (monthlyCapMicroCredits: number) => (await request<Budget>('PUT', path(kind, scopeId), tenantScope, { monthlyCapMicroCredits })).body,
    onSuccess: () => {
      setCap('');
      refresh();
    },
  });
  const remove = useMutation({
    mutationFn: async (b: Budget) => {
      await request<void>('DELETE', path(b.kind, b.id), tenantScope);
    },
    onSuccess: refresh,
  });
  return (
    <section aria-labelledby="budgets-title">
      <h2 id="budgets-title">Budgets</h2>
      <p className="muted">
        A monthly cap per OAuth client or product key. A request its budget no longer covers is refused (402 budget_exceeded) before any model is called; budgets start again each calendar month (UTC).
      </p>
      {budgets.isPending && <Loading what="budgets" />}
      {budgets.error && <ErrorState error={budgets.error} onRetry={() => void budgets.refetch()} hint="Budgets are shown to admins of the tenant." />}
      {budgets.data && budgets.data.length === 0 && <p>No budgets set: requests are limited only by the credit balance.</p>}
      {budgets.data && budgets.data.length > 0 && (
        <table aria-label="Budgets">
          <thead>
            <tr>
              <th>Budget for</th>
              <th>Spent this month (credits)</th>
              <th>Monthly cap (credits)</th>
              <th>Held by requests in flight (credits)</th>
              <th>
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {budgets.data.map((b) => (
              <tr key={`${b.kind}:${b.id}`}>
                <td>{nameOf(b)}</td>
                <td data-testid={`budget-spent-${b.kind}-${b.id}`}>
                  {credits(b.spentMicroCredits)}
                  {b.spentMicroCredits + b.reservedMicroCredits >= b.monthlyCapMicroCredits && <strong className="badge"> spent</strong>}
                </td>
                <td>{credits(b.monthlyCapMicroCredits)}</td>
                <td>{credits(b.reservedMicroCredits)}</td>
                <td>
                  <Button isDisabled={remove.isPending || !!readOnly} onPress={() => remove.mutate(b)} aria-label={`Remove budget of ${nameOf(b)}`}>
                    Remove
                  </Button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {remove.error && <ErrorState error={remove.error} />}
      <Form
        className="react-aria-Form budget-form"
        aria-label="Set a budget"
        onSubmit={(e) => {
          e.preventDefault();
          const micro = toMicro(cap);
          if (micro !== undefined && scopeId !== '') save.mutate(micro);
        }}
      >
        <ChoiceSelect label="Budget for" value={kind} options={KINDS} onChange={setKind} />
        {kind === 'client' &&
          (clientOptions.length > 0 ? (
            <ChoiceSelect label="OAuth client" value={chosenClient} options={clientOptions} onChange={setClientId} />
          ) : (
            <p className="muted">{clients.isPending ? 'Loading OAuth clients…' : 'This tenant has no OAuth clients yet.'}</p>
          ))}
        {kind === 'product' && (
          <TextField value={productKey} onChange={setProductKey} isRequired isDisabled={!!readOnly} maxLength={64} validate={(v) => (/^[\x21-\x7e]{1,64}$/.test(v.trim()) ? null : 'Enter a product key, as sent in x-service-product-key.')}>
            <Label>Product key</Label>
            <Input />
            <FieldError />
          </TextField>
        )}
        <TextField value={cap} onChange={setCap} isRequired isDisabled={!!readOnly} inputMode="decimal" validate={(v) => (toMicro(v) === undefined ? 'Enter a number of credits, 0 or more.' : null)}>
          <Label>Monthly cap (credits)</Label>
          <Input />
          <FieldError />
        </TextField>
        <div className="actions">
          <Button type="submit" className="primary" isDisabled={save.isPending || !!readOnly || scopeId === ''}>
            Save budget
          </Button>
        </div>
      </Form>
      {save.error && <ErrorState error={save.error} />}
    </section>
  );
}
