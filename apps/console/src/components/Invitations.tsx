import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Button } from 'react-aria-components';
import { request } from '../api';
import { useSession, useSignedIn } from '../session';
import { type Invitation, useMyInvitations } from '../tenant-queries';
import { ErrorState } from './States';

/**
 * The signed-in user's pending invitations, on every page while there are any: joining a tenant is
 * their choice (accept), and the tenant they act in stays the one they picked.
 */
export function PendingInvitations() {
  const { scope } = useSignedIn();
  const { joinTenant } = useSession();
  const qc = useQueryClient();
  const q = useMyInvitations(scope);
  const [joined, setJoined] = useState<string | null>(null);
  const answer = useMutation({
    mutationFn: async ({ id, verb }: { id: string; verb: 'accept' | 'decline' }) =>
      (await request<Invitation>('POST', `/api/invitations/${encodeURIComponent(id)}/${verb}`, { token: scope.token })).body,
    onSuccess: (inv) => {
      if (inv.status === 'accepted') {
        joinTenant({ tenant_id: inv.tenantId, tenant_name: inv.tenantName, role: inv.role });
        setJoined(inv.tenantName);
      }
      void qc.invalidateQueries({ queryKey: ['my-invitations'] });
      void qc.invalidateQueries({ queryKey: ['tenants'] });
    },
  });
  const pending = q.data ?? [];
  if (pending.length === 0 && !joined) return null;
  return (
    <section aria-labelledby="invitations-title" className="panel invitations">
      <h2 id="invitations-title">Invitations</h2>
      {joined && <p role="status">You joined {joined}; pick it in the tenant menu to work there.</p>}
      {pending.length > 0 && (
        <ul className="invitation-list">
          {pending.map((inv) => (
            <li key={inv.id}>
              <span>
                <strong>{inv.tenantName}</strong> invites you as <strong>{inv.role}</strong>
                <span className="muted"> ({new Date(inv.createdAt).toLocaleDateString()})</span>
              </span>
              <Button aria-label={`Accept the invitation to ${inv.tenantName}`} isDisabled={answer.isPending} onPress={() => answer.mutate({ id: inv.id, verb: 'accept' })}>
                Accept
              </Button>
              <Button aria-label={`Decline the invitation to ${inv.tenantName}`} isDisabled={answer.isPending} onPress={() => answer.mutate({ id: inv.id, verb: 'decline' })}>
                Decline
              </Button>
            </li>
          ))}
        </ul>
      )}
      {answer.error && <ErrorState error={answer.error} />}
    </section>
  );
}
