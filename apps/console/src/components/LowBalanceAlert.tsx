import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Button, FieldError, Form, Input, Label, TextField } from 'react-aria-components';
import { request } from '../api';
import { useReadOnly } from '../read-only';
import { useSignedIn } from '../session';
import { credits, type LowBalanceAlert as Alert, useLowBalanceAlert, useLowBalanceCrossings } from '../tenant-queries';
import { ErrorState, Loading } from './States';

/** Credits as typed (up to 6 decimals) to micro-credits; undefined when not an amount. */
function toMicro(v: string): number | undefined {
  const n = Number(v.trim());
  if (v.trim() === '' || !Number.isFinite(n) || n < 0 || n > 9_000_000_000) return undefined;
  return Math.round(n * 1_000_000);
}

/**
 * The billing page's low-balance alert: a banner while the balance is at or below the threshold, the
 * threshold (set in credits, stored in micro-credits), and the crossings the gateway recorded.
 */
export function LowBalanceAlert() {
  const { scope } = useSignedIn();
  const readOnly = useReadOnly();
  const tenantScope = { ...scope, environment: undefined };
  const alert = useLowBalanceAlert(scope);
  const crossings = useLowBalanceCrossings(scope);
  const queries = useQueryClient();
  const [draft, setDraft] = useState<string | undefined>(undefined);
  const threshold = alert.data?.threshold ?? null;
  const shown = draft ?? (threshold !== null ? String(threshold / 1_000_000) : '');
  const refresh = (data: Alert | undefined) => {
    if (data) queries.setQueryData(['low-balance-alert', scope.tenantId], data);
    else void queries.invalidateQueries({ queryKey: ['low-balance-alert', scope.tenantId] });
    setDraft(undefined);
  };
  const save = useMutation({
    mutationFn: async (threshold: number) => (await request<Alert>('PUT', '/api/billing/low-balance-alert', tenantScope, { threshold })).body,
    onSuccess: refresh,
  });
  const remove = useMutation({
    mutationFn: async () => {
      await request<void>('DELETE', '/api/billing/low-balance-alert', tenantScope);
    },
    onSuccess: () => refresh(undefined),
  });
  return (
    <section aria-labelledby="low-balance-title">
      <h3 id="low-balance-title">Low-balance alert</h3>
      {alert.isPending && <Loading what="low-balance alert" />}
      {alert.error && <ErrorState error={alert.error} hint="The low-balance alert is shown to admins of the tenant." />}
      {alert.data?.below && alert.data.threshold !== null && (
        <p role="alert" className="notice problem-warning">
          {`The balance (${credits(alert.data.balance)} credits) is at or below the alert threshold of ${credits(alert.data.threshold)} credits: buy credits so AI requests keep being served.`}
        </p>
      )}
      {alert.data && (
        <Form
          aria-label="Low-balance alert"
          onSubmit={(e) => {
            e.preventDefault();
            const micro = toMicro(shown);
            if (micro !== undefined) save.mutate(micro);
          }}
        >
          <TextField
            value={shown}
            onChange={setDraft}
            isRequired
            isDisabled={!!readOnly}
            inputMode="decimal"
            validate={(v) => (toMicro(v) === undefined ? 'Enter a number of credits, 0 or more.' : null)}
          >
            <Label>Alert when the balance falls to (credits)</Label>
            <Input />
            <FieldError />
          </TextField>
          <p className="muted" data-testid="low-balance-state">
            {alert.data.threshold === null ? 'No alert set.' : alert.data.armed ? 'Armed: the next fall to the threshold is recorded.' : 'Recorded: armed again once the balance is back above the threshold.'}
          </p>
          <div className="actions">
            <Button type="submit" className="primary" isDisabled={save.isPending || !!readOnly}>
              Save alert
            </Button>
            {alert.data.threshold !== null && (
              <Button isDisabled={remove.isPending || !!readOnly} onPress={() => remove.mutate()}>
                Remove alert
              </Button>
            )}
          </div>
        </Form>
      )}
      {save.error && <ErrorState error={save.error} />}
      {remove.error && <ErrorState error={remove.error} />}
      {crossings.data && crossings.data.length > 0 && (
        <table aria-label="Recorded crossings">
          <thead>
            <tr>
              <th>When</th>
              <th>Threshold</th>
              <th>Balance left</th>
            </tr>
          </thead>
          <tbody>
            {crossings.data.map((c) => (
              <tr key={c.id}>
                <td>{new Date(c.crossedAt).toLocaleString()}</td>
                <td>{credits(c.threshold)}</td>
                <td>{credits(c.balance)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
