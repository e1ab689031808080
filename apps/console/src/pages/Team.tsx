import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { request } from '../api';
import { ChoiceSelect } from '../components/ChoiceSelect';
import { ConfirmButton } from '../components/Confirm';
import { MutationForm, TextInput } from '../components/MutationForm';
import { Empty, ErrorState, Loading } from '../components/States';
import { useReadOnly } from '../read-only';
import { useSignedIn } from '../session';
import { type Invitation, ROLES, useMembers, useTenantInvitations, type TenantRole, type TenantUser } from '../tenant-queries';
import { TableHead } from '../components/TableHead';

const ROLE_HELP: Record<TenantRole, string> = {
  admin: 'everything: billing, team, OAuth clients',
  editor: 'flags and projects',
  viewer: 'read only',
};

/** One member: their role, changeable, and removal (admins only; the API keeps the last admin). */
function MemberRow({ member }: { member: TenantUser }) {
  const { scope, tenantId, email } = useSignedIn();
  const readOnly = useReadOnly();
  const qc = useQueryClient();
  const path = `/api/tenants/${encodeURIComponent(tenantId)}/users/${encodeURIComponent(member.userId)}`;
  const tenantScope = { ...scope, environment: undefined };
  const done = () => void qc.invalidateQueries({ queryKey: ['members', tenantId] });
  const role = useMutation({ mutationFn: async (r: TenantRole) => (await request<TenantUser>('PATCH', path, tenantScope, { role: r })).body, onSuccess: done });
  const remove = useMutation({ mutationFn: async () => (await request<unknown>('DELETE', path, tenantScope)).body, onSuccess: done });
  const error = role.error ?? remove.error;
  const who = member.email === email ? `${member.email} (you)` : member.email;
  return (
    <tr>
      <td>
        {member.displayName && member.displayName !== member.email ? `${member.displayName} ` : ''}
        <span className="muted">{who}</span>
        {member.status === 'invited' && <span className="badge invited">Invited</span>}
      </td>
      <td>
        {readOnly ? (
          member.role
        ) : (
          <ChoiceSelect label={`Role of ${member.email}`} className="select compact" value={member.role} options={ROLES.map((r) => ({ id: r, name: r }))} onChange={(r) => r !== member.role && role.mutate(r)} />
        )}
      </td>
      <td>{member.lastAccessedAt ? new Date(member.lastAccessedAt).toLocaleString() : member.status === 'invited' ? 'not signed in yet' : 'never'}</td>
      <td>{new Date(member.createdAt).toLocaleDateString()}</td>
      <td>
        <ConfirmButton
          label={member.status === 'invited' ? `Withdraw the invitation of ${member.email}` : `Remove ${member.email}`}
          title={
            member.status === 'invited'
              ? `Withdraw the invitation of ${member.email}? They will not join this tenant when they sign in.`
              : `Remove ${member.email} from this tenant? They lose access at once.`
          }
          confirm={member.status === 'invited' ? 'Withdraw invitation' : 'Remove member'}
          isDisabled={remove.isPending || !!readOnly}
          onConfirm={() => remove.mutate()}
        >
          {member.status === 'invited' ? 'Withdraw' : 'Remove'}
        </ConfirmButton>
        {error && <ErrorState error={error} />}
      </td>
    </tr>
  );
}

/** The tenant's pending invitations (admins): who was invited, as what, and Withdraw. */
function TenantInvitations() {
  const { scope, tenantId } = useSignedIn();
  const readOnly = useReadOnly();
  const qc = useQueryClient();
  const q = useTenantInvitations(scope, true);
  const withdraw = useMutation({
    mutationFn: async (id: string) =>
      (await request<unknown>('DELETE', `/api/tenants/${encodeURIComponent(tenantId)}/invitations/${encodeURIComponent(id)}`, { ...scope, environment: undefined })).body,
    onSuccess: () => void qc.invalidateQueries({ queryKey: ['tenant-invitations', tenantId] }),
  });
  if (!q.data || q.data.length === 0) return null;
  return (
    <div className="panel">
      <h2>Pending invitations</h2>
      <ul className="invitation-list">
        {q.data.map((inv: Invitation) => (
          <li key={inv.id}>
            <span>
              {inv.email} <span className="muted">as {inv.role}, invited {new Date(inv.createdAt).toLocaleDateString()}, expires {new Date(inv.expiresAt).toLocaleDateString()}</span>
            </span>
            <ConfirmButton
              label={`Withdraw the invitation of ${inv.email}`}
              title={`Withdraw the invitation of ${inv.email}? They can no longer accept it.`}
              confirm="Withdraw invitation"
              isDisabled={withdraw.isPending || !!readOnly}
              onConfirm={() => withdraw.mutate(inv.id)}
            >
              Withdraw
            </ConfirmButton>
          </li>
        ))}
      </ul>
      {withdraw.error && <ErrorState error={withdraw.error} />}
    </div>
  );
}

export function Team() {
  const { scope, tenantId, tenants } = useSignedIn();
  const readOnly = useReadOnly();
  const qc = useQueryClient();
  const q = useMembers(scope);
  const myRole = tenants.find((t) => t.tenant_id === tenantId)?.role;
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<TenantRole>('viewer');
  const [invited, setInvited] = useState<Invitation | null>(null);
  const add = useMutation({
    mutationFn: async () =>
      (await request<Invitation>('POST', `/api/tenants/${encodeURIComponent(tenantId)}/users`, { ...scope, environment: undefined }, { email: email.trim(), role })).body,
    onSuccess: (inv) => {
      setEmail('');
      setInvited(inv);
      void qc.invalidateQueries({ queryKey: ['tenant-invitations', tenantId] });
    },
  });
  return (
    <section aria-labelledby="team-title">
      <h1 id="team-title">Team</h1>
      <p className="muted">
        Roles: {ROLES.map((r) => `${r} (${ROLE_HELP[r]})`).join('; ')}.
        {myRole && ` Your role here: ${myRole}.`}
      </p>
      {q.isPending && <Loading what="members" />}
      {q.error && <ErrorState error={q.error} onRetry={() => void q.refetch()} hint="Seeing the team needs the admin role in this tenant." />}
      {q.data && q.data.length === 0 && <Empty>No members.</Empty>}
      {q.data && q.data.length > 0 && (
        <table>
          <caption className="visually-hidden">Members of this tenant</caption>
          <TableHead columns={['Member', 'Role', 'Last active', 'Joined']} actions />
          <tbody>
            {q.data.map((u) => (
              <MemberRow key={u.userId} member={u} />
            ))}
          </tbody>
        </table>
      )}
      {myRole === 'admin' && <TenantInvitations />}
      <div className="panel">
        <h2>Invite a member</h2>
        <p className="muted">They join when they accept the invitation, signed in with that e-mail (Withdraw cancels it while it is pending).</p>
        {invited && <p role="status">Invited {invited.email} as {invited.role}.</p>}
        <MutationForm label="Invite a member" mutation={add} submit="Invite member" disabled={!!readOnly}>
          <TextInput label="Member email" name="email" type="email" value={email} onChange={setEmail} isDisabled={!!readOnly} />
          <ChoiceSelect label="Role" value={role} options={ROLES.map((r) => ({ id: r, name: r }))} onChange={setRole} />
        </MutationForm>
      </div>
    </section>
  );
}
