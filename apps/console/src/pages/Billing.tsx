// Loaded on demand (React.lazy in App.tsx).
import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import { Button, FieldError, Form, Input, Label, TextField } from 'react-aria-components';
import { request } from '../api';
import { Budgets } from '../components/Budgets';
import { LowBalanceAlert } from '../components/LowBalanceAlert';
import { ErrorState, Loading } from '../components/States';
import { useReadOnly } from '../read-only';
import { useSignedIn } from '../session';
import { credits, useCredits, useSubscription } from '../tenant-queries';

const PLANS = [
  { id: 'free', name: 'Free', blurb: 'Flags for small teams' },
  { id: 'standard', name: 'Standard', blurb: 'Higher rate limits' },
  { id: 'premium', name: 'Premium', blurb: 'Enterprise AI gateway access for core' },
] as const;

/** Stripe's hosted pages come back here. */
const here = () => `${window.location.origin}/console/billing`;

/** Sends the browser to the hosted page the API answers with (Checkout or the customer portal). */
const follow = ({ url }: { url: string }) => window.location.assign(url);

export function Billing() {
  const { scope } = useSignedIn();
  const readOnly = useReadOnly();
  const tenantScope = { ...scope, environment: undefined };
  const sub = useSubscription(scope);
  const balance = useCredits(scope);
  const [amount, setAmount] = useState('10');
  const checkout = useMutation({
    mutationFn: async (planId: string) =>
      (await request<{ url: string }>('POST', '/api/billing/checkout', tenantScope, { type: 'subscription', planId, successUrl: `${here()}?done=plan`, cancelUrl: here() }))
        .body,
    onSuccess: follow,
  });
  const portal = useMutation({
    mutationFn: async () => (await request<{ url: string }>('POST', '/api/billing/portal', tenantScope, { returnUrl: here() })).body,
    onSuccess: follow,
  });
  const buy = useMutation({
    mutationFn: async () =>
      (
        await request<{ url: string }>('POST', '/api/billing/checkout', tenantScope, {
          type: 'credits',
          amount: Math.round(Number(amount) * 100),
          successUrl: `${here()}?done=credits`,
          cancelUrl: here(),
        })
      ).body,
    onSuccess: follow,
  });
  const done = new URLSearchParams(window.location.search).get('done');
  const current = sub.data?.plan;
  return (
    <section aria-labelledby="billing-title">
      <h1 id="billing-title">Plan and billing</h1>
      {done && (
        <p role="status" className="notice">
          {done === 'credits' ? 'Thank you: the credits appear once the payment is confirmed.' : 'Thank you: the plan changes once the payment is confirmed.'}
        </p>
      )}
      <div className="panel">
        <h2>Subscription</h2>
        {sub.isPending && <Loading what="subscription" />}
        {sub.error && <ErrorState error={sub.error} onRetry={() => void sub.refetch()} hint="Billing is shown to admins of the tenant." />}
        {sub.data && (
          <dl className="settings">
            <dt>Plan</dt>
            <dd data-testid="plan">{sub.data.plan}</dd>
            <dt>Status</dt>
            <dd data-testid="subscription-status">{sub.data.status}</dd>
            <dt>Current period</dt>
            <dd>
              {sub.data.currentPeriodStart && sub.data.currentPeriodEnd
                ? `${new Date(sub.data.currentPeriodStart).toLocaleDateString()} – ${new Date(sub.data.currentPeriodEnd).toLocaleDateString()}`
                : '—'}
            </dd>
            <dt>Renews</dt>
            <dd>{sub.data.cancelAtPeriodEnd ? 'No: ends with the current period' : sub.data.id ? 'Yes' : '—'}</dd>
          </dl>
        )}
        <div className="plans">
          {PLANS.map((p) => (
            <div key={p.id} className="card">
              <strong>{p.name}</strong>
              <span className="muted">{p.blurb}</span>
              {current === p.id ? (
                <span className="badge">Current plan</span>
              ) : (
                <Button className="primary" isDisabled={checkout.isPending || !!readOnly || !sub.data} onPress={() => checkout.mutate(p.id)}>
                  {`Switch to ${p.name}`}
                </Button>
              )}
            </div>
          ))}
        </div>
        {checkout.error && <ErrorState error={checkout.error} />}
        <div className="actions">
          <Button isDisabled={portal.isPending || !!readOnly} onPress={() => portal.mutate()}>
            Manage billing in the customer portal
          </Button>
        </div>
        {portal.error && <ErrorState error={portal.error} />}
      </div>
      <div className="panel">
        <h2>AI credits</h2>
        {balance.isPending && <Loading what="credit balance" />}
        {balance.error && <ErrorState error={balance.error} />}
        {balance.data && (
          <dl className="settings">
            <dt>Balance</dt>
            <dd>{credits(balance.data.balance)} credits</dd>
            <dt>Held by requests in flight</dt>
            <dd>{credits(balance.data.reserved)} credits</dd>
          </dl>
        )}
        <Form
          aria-label="Buy credits"
          onSubmit={(e) => {
            e.preventDefault();
            buy.mutate();
          }}
        >
          <TextField
            value={amount}
            onChange={setAmount}
            isRequired
            isDisabled={!!readOnly}
            inputMode="decimal"
            validate={(v) => {
              const n = Number(v);
              return Number.isFinite(n) && n >= 0.5 && n <= 10_000 ? null : 'Enter an amount from 0.50 to 10,000 USD.';
            }}
          >
            <Label>Amount (USD)</Label>
            <Input />
            <FieldError />
          </TextField>
          <div className="actions">
            <Button type="submit" className="primary" isDisabled={buy.isPending || !!readOnly}>
              Buy credits
            </Button>
          </div>
        </Form>
        {buy.error && <ErrorState error={buy.error} />}
        <LowBalanceAlert />
      </div>
      <div className="panel">
        <Budgets />
      </div>
    </section>
  );
}

export default Billing;
