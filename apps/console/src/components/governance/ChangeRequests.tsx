import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Button, Form, Label, TextArea, TextField } from 'react-aria-components';
import { request, type Flag, type RequestScope } from '../../api';
import { useSignedIn } from '../../session';
import { Empty, ErrorState, Loading } from '../States';
import { FieldDiff } from '../targeting/ConflictPanel';
import { approvalBlocked, type ChangeRequest, changeRequestsPath, formatTime, patchFieldLabels, refreshFlagChanges, useAuthorNames, useChangeRequests } from './governance';

const STATE_LABELS: Record<ChangeRequest['state'], string> = {
  pending: 'Pending approval',
  approved: 'Approved, not applied',
  applied: 'Applied',
  rejected: 'Rejected',
  stale: 'Stale',
};

/** The flag's change requests in the environment, newest first: each with its diff, comments and the steps open to the member. */
export function ChangeRequests({ flag, scope: session }: { flag: Flag; scope: RequestScope }) {
  // The flag's own environment, as the editor uses: the lists never mix two environments.
  const scope = { ...session, environment: flag.environment };
  const q = useChangeRequests(scope, flag.key);
  return (
    <section className="panel" aria-labelledby="change-requests-title">
      <h2 id="change-requests-title">Change requests in {flag.environment}</h2>
      {q.isPending && <Loading what="change requests" />}
      {q.isError && <ErrorState error={q.error} onRetry={() => void q.refetch()} />}
      {q.isSuccess && q.data.length === 0 && (
        <Empty>
          <p>No change requests for this flag in {flag.environment}.</p>
        </Empty>
      )}
      {q.isSuccess && q.data.length > 0 && (
        <ol className="change-requests">
          {q.data.map((r) => (
            <li key={r.id}>
              <ChangeRequestItem flag={flag} request={r} scope={scope} />
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}

type Step = 'approve' | 'reject' | 'apply';

export function ChangeRequestItem({ flag, request: r, scope, showDiff = true }: { flag: Flag; request: ChangeRequest; scope: RequestScope; showDiff?: boolean }) {
  const { userId, tenants, tenantId } = useSignedIn();
  const role = tenants.find((t) => t.tenant_id === tenantId)?.role;
  const name = useAuthorNames(scope);
  const qc = useQueryClient();
  const [comment, setComment] = useState('');
  const path = `${changeRequestsPath(flag.key)}/${encodeURIComponent(r.id)}`;
  const step = useMutation({
    mutationFn: async (s: Step) => (await request<ChangeRequest>('POST', `${path}/${s}`, scope, s === 'apply' ? undefined : {})).body,
    // A 409 stale is recorded by the API before it answers: the list shows the request stale either way.
    onSettled: () => refreshFlagChanges(qc, scope, flag.key),
  });
  const addComment = useMutation({
    mutationFn: async () => (await request<ChangeRequest>('POST', `${path}/comments`, scope, { comment })).body,
    onSuccess: () => {
      setComment('');
      refreshFlagChanges(qc, scope, flag.key);
    },
  });
  const blocked = approvalBlocked(r, userId, role);
  const mine = userId !== undefined && r.author === `user:${userId}`;
  // Viewers read requests; every step (and a comment) is an editor's or an admin's.
  const viewer = role === 'viewer';
  const open = r.state === 'pending' || r.state === 'approved';
  const label = `Change request by ${name(r.author)}, ${STATE_LABELS[r.state]}`;
  return (
    <article aria-label={label} className={`change-request state-${r.state}`}>
      <p>
        <strong className="badge">{STATE_LABELS[r.state]}</strong> by <span>{name(r.author)}</span>, <time dateTime={r.createdAt}>{formatTime(r.createdAt)}</time>
        {r.executeAt && (
          <>
            {' '}
            · applies at <time dateTime={r.executeAt}>{formatTime(r.executeAt)}</time>
          </>
        )}
        {r.decidedBy && ` · ${r.state === 'rejected' ? 'rejected' : 'approved'} by ${name(r.decidedBy)}`}
        {r.appliedBy && ` · applied by ${name(r.appliedBy)}`}
      </p>
      {r.state === 'stale' && (
        <p className="state error" role="note">
          Stale: the flag changed after this request was made (it was made against version {r.baseVersion}, the flag is at &quot;{flag.version}&quot;), so it can no longer be approved or applied. Make a new request from the
          flag as it is now.
        </p>
      )}
      {showDiff && open ? (
        // Against the flag as it is now: what applying it would change.
        Object.entries(r.patch).map(([field, to]) => <FieldDiff key={field} change={{ field, from: (flag as unknown as Record<string, unknown>)[field], to }} />)
      ) : (
        <p>Changes: {patchFieldLabels(r.patch).join(', ')}.</p>
      )}
      {r.comments.length > 0 && (
        <ul className="comments" aria-label="Comments">
          {r.comments.map((c, i) => (
            <li key={`${c.at}-${i}`}>
              <strong>{name(c.author)}</strong> (<time dateTime={c.at}>{formatTime(c.at)}</time>): {c.body}
            </li>
          ))}
        </ul>
      )}
      {open && viewer && blocked && <p className="muted">{blocked}</p>}
      {open && !viewer && (
        <div className="actions">
          {r.state === 'pending' && (blocked ? <p className="muted">{blocked}</p> : <Button className="react-aria-Button primary" isDisabled={step.isPending} onPress={() => step.mutate('approve')}>Approve</Button>)}
          {r.state === 'approved' && (
            <Button className="react-aria-Button primary" isDisabled={step.isPending} onPress={() => step.mutate('apply')}>
              {r.executeAt ? 'Apply (schedule it)' : 'Apply'}
            </Button>
          )}
          <Button isDisabled={step.isPending} onPress={() => step.mutate('reject')}>
            {mine ? 'Withdraw' : 'Reject'}
          </Button>
        </div>
      )}
      {step.error ? <ErrorState error={step.error} /> : null}
      {open && !viewer && (
        <Form
          aria-label={`Comment on the ${label.charAt(0).toLowerCase()}${label.slice(1)}`}
          className="comment-form"
          onSubmit={(e) => {
            e.preventDefault();
            if (comment.trim() !== '') addComment.mutate();
          }}
        >
          <TextField value={comment} onChange={setComment} maxLength={2000}>
            <Label>Comment</Label>
            <TextArea rows={2} />
          </TextField>
          <Button type="submit" isDisabled={addComment.isPending || comment.trim() === ''}>
            Add comment
          </Button>
        </Form>
      )}
      {addComment.error ? <ErrorState error={addComment.error} /> : null}
    </article>
  );
}
