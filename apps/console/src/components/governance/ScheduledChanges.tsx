import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Button } from 'react-aria-components';
import { request, type Flag, type RequestScope } from '../../api';
import { Empty, ErrorState, Loading } from '../States';
import { formatTime, patchFieldLabels, refreshFlagChanges, type ScheduledChange, scheduledChangesPath, useAuthorNames, useScheduledChanges } from './governance';
import { TableHead } from '../TableHead';

const STATE_LABELS: Record<ScheduledChange['state'], string> = { scheduled: 'Pending', applied: 'Done', failed: 'Failed', cancelled: 'Cancelled' };

/** The flag's scheduled changes in the environment, latest first: pending ones can be cancelled, failed ones say why. */
export function ScheduledChanges({ flag, scope: session }: { flag: Flag; scope: RequestScope }) {
  // The flag's own environment, as the editor uses: the lists never mix two environments.
  const scope = { ...session, environment: flag.environment };
  const q = useScheduledChanges(scope, flag.key);
  const name = useAuthorNames(scope);
  const qc = useQueryClient();
  const cancel = useMutation({
    mutationFn: async (id: string) => request<void>('DELETE', `${scheduledChangesPath(flag.key)}/${encodeURIComponent(id)}`, scope),
    onSettled: () => refreshFlagChanges(qc, scope, flag.key),
  });
  return (
    <section className="panel" aria-labelledby="scheduled-title">
      <h2 id="scheduled-title">Scheduled changes in {flag.environment}</h2>
      {q.isPending && <Loading what="scheduled changes" />}
      {q.isError && <ErrorState error={q.error} onRetry={() => void q.refetch()} />}
      {q.isSuccess && q.data.length === 0 && (
        <Empty>
          <p>Nothing scheduled for this flag in {flag.environment}. Schedule edits from the editor above (where changes need approval, with a change request’s “Apply at”).</p>
        </Empty>
      )}
      {q.isSuccess && q.data.length > 0 && (
        <table>
          <caption className="visually-hidden">Scheduled changes of {flag.name}</caption>
          <TableHead columns={['At', 'Changes', 'By', 'State']} actions />
          <tbody>
            {q.data.map((s) => (
              <tr key={s.id}>
                <td>
                  <time dateTime={s.executeAt}>{formatTime(s.executeAt)}</time>
                </td>
                <td>{patchFieldLabels(s.patch).join(', ')}</td>
                <td>
                  {name(s.author)}
                  {s.approvedBy && <div className="muted">approved by {name(s.approvedBy)}</div>}
                </td>
                <td>
                  <strong>{STATE_LABELS[s.state]}</strong>
                  {s.state === 'failed' && s.reason && <div className="diff-from">{s.reason}</div>}
                  {s.finishedAt && s.state !== 'cancelled' && (
                    <div className="muted">
                      <time dateTime={s.finishedAt}>{formatTime(s.finishedAt)}</time>
                    </div>
                  )}
                </td>
                <td>
                  {s.state === 'scheduled' && (
                    <Button isDisabled={cancel.isPending} aria-label={`Cancel the change scheduled for ${formatTime(s.executeAt)}`} onPress={() => cancel.mutate(s.id)}>
                      Cancel
                    </Button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {cancel.error ? <ErrorState error={cancel.error} /> : null}
    </section>
  );
}
