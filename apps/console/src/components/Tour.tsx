import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Button } from 'react-aria-components';
import { request } from '../api';
import { useReadOnly } from '../read-only';
import { useSignedIn } from '../session';
import { TOUR_KEY, useTour, type TourStatus } from '../tenant-queries';
import { ErrorState } from './States';

export const TOUR_STEPS = [
  { title: 'Flags', text: 'Flags lists every flag in the environment picked above; each row has a switch that turns the flag on or off there.' },
  { title: 'Projects and environments', text: 'Group flags in coloured projects; each environment (production, staging, …) keeps its own targeting.' },
  { title: 'Team and OAuth clients', text: 'Add teammates with a role, and create OAuth clients for your backends to call the API and the AI gateway.' },
  { title: 'AI usage and billing', text: 'See every AI gateway request, your credit balance and your plan; export the ledger as CSV.' },
] as const;

/**
 * The first-run tour: shown while the user's `console-intro` product tour is not completed, and
 * never again once they finish or skip it (recorded with PUT /v1/users/me/product-tours/...).
 * Not modal: it never blocks the page under it.
 */
export function Tour() {
  const { scope } = useSignedIn();
  const qc = useQueryClient();
  // A read-only tenant could not record the tour's completion: it would come back on every visit.
  const readOnly = useReadOnly();
  const q = useTour(scope, !readOnly);
  const [step, setStep] = useState(0);
  const done = useMutation({
    mutationFn: async () => (await request<TourStatus>('PUT', `/v1/users/me/product-tours/${TOUR_KEY}`, { ...scope, environment: undefined }, { completed: true })).body,
    onSuccess: (s) => qc.setQueryData(['tour', scope.tenantId, TOUR_KEY], s),
  });
  // A tour that cannot be read is not worth an error on every screen: it just does not show.
  if (readOnly || !q.data || q.data.completed) return null;
  const s = TOUR_STEPS[step] ?? TOUR_STEPS[0];
  const last = step === TOUR_STEPS.length - 1;
  return (
    <aside className="tour" aria-labelledby="tour-title">
      <p className="muted">
        Welcome tour · step {step + 1} of {TOUR_STEPS.length}
      </p>
      <h2 id="tour-title">{s.title}</h2>
      <p>{s.text}</p>
      <div className="actions">
        {step > 0 && <Button onPress={() => setStep(step - 1)}>Back</Button>}
        {last ? (
          <Button className="primary" isDisabled={done.isPending} onPress={() => done.mutate()}>
            Finish tour
          </Button>
        ) : (
          <Button className="primary" onPress={() => setStep(step + 1)}>
            Next
          </Button>
        )}
        {!last && (
          <Button isDisabled={done.isPending} onPress={() => done.mutate()}>
            Skip tour
          </Button>
        )}
      </div>
      {done.error && <ErrorState error={done.error} />}
    </aside>
  );
}
