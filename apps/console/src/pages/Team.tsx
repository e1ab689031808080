import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Button, FieldError, Form, Input, Label, TextField } from 'react-aria-components';
import { isApiError, request } from '../api';
import { ChoiceSelect } from '../components/ChoiceSelect';
import { Empty, ErrorState, Loading } from '../components/States';
import { useReadOnly } from '../read-only';
import { useSignedIn } from '../session';
import { ROLES, useMembers, type TenantRole, type TenantUser } from '../tenant-queries';

const ROLE_HELP: Record<TenantRole, string> = {
  admin: 'everything: billing, team, OAuth clients',
  editor: 'flags and projects',
  viewer: 'read only',
};

export function Team() {
  const { scope, tenantId, tenants } = useSignedIn();
  const readOnly = useReadOnly();
  const qc = useQueryClient();
  const q = useMembers(scope);
  const myRole = tenants.find((t) => t.tenant_id === tenantId)?.role;
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<TenantRole>('viewer');
  const add = useMutation({
    mutationFn: async () =>
      (await request<TenantUser>('POST', `/api/tenants/${encodeURIComponent(tenantId)}/users`, { ...scope, environment: undefined }, { email: email.trim(), role })).body,
    onSuccess: () => {
      setEmail('');
      void qc.invalidateQueries({ queryKey: ['members', tenantId] });
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
          <thead>
            <tr>
              <th scope="col">Member</th>
              <th scope="col">Role</th>
              <th scope="col">Last active</th>
              <th scope="col">Joined</th>
            </tr>
          </thead>
          <tbody>
            {q.data.map((u) => (
              <tr key={u.userId}>
                <td>
                  {u.displayName && u.displayName !== u.email ? `${u.displayName} ` : ''}
                  <span className="muted">{u.email}</span>
                </td>
                <td>{u.role}</td>
                <td>{u.lastAccessedAt ? new Date(u.lastAccessedAt).toLocaleString() : 'never'}</td>
                <td>{new Date(u.createdAt).toLocaleDateString()}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <div className="panel">
        <h2>Add a member</h2>
        <p className="muted">The person needs an account already; they see this tenant in their tenant switcher at their next sign-in.</p>
        <Form
          aria-label="Add a member"
          validationErrors={isApiError(add.error) ? add.error.fieldErrors : undefined}
          onSubmit={(e) => {
            e.preventDefault();
            add.mutate();
          }}
        >
          <TextField name="email" type="email" isRequired value={email} onChange={setEmail} isDisabled={!!readOnly}>
            <Label>Member email</Label>
            <Input />
            <FieldError />
          </TextField>
          <ChoiceSelect label="Role" value={role} options={ROLES.map((r) => ({ id: r, name: r }))} onChange={setRole} />
          <div className="actions">
            <Button type="submit" className="primary" isDisabled={add.isPending || !!readOnly}>
              Add member
            </Button>
          </div>
        </Form>
        {add.error && <ErrorState error={add.error} />}
      </div>
    </section>
  );
}
