import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Switch } from 'react-aria-components';
import { request, type Environment } from '../api';
import { MutationForm, TextInput } from '../components/MutationForm';
import { Empty, ErrorState, Loading } from '../components/States';
import { useEnvironments } from '../queries';
import { useReadOnly } from '../read-only';
import { useSignedIn } from '../session';

const ENV_KEY = /^[a-z0-9][a-z0-9-]{0,62}$/;

/**
 * Whether changes to the environment's flags need another member's approval: a switch for tenant
 * admins (the API's rule), the state in words for everyone else.
 */
function RequireApproval({ env }: { env: Environment }) {
  const { scope, tenants, tenantId } = useSignedIn();
  const readOnly = useReadOnly();
  const admin = tenants.find((t) => t.tenant_id === tenantId)?.role === 'admin';
  const qc = useQueryClient();
  const m = useMutation({
    mutationFn: async (requireApproval: boolean) => (await request<Environment>('PATCH', `/api/environments/${encodeURIComponent(env.key)}`, { ...scope, environment: undefined }, { requireApproval })).body,
    onSuccess: (updated) => qc.setQueryData<Environment[]>(['environments', scope.tenantId], (list) => list?.map((e) => (e.key === updated.key ? updated : e))),
  });
  const on = m.isPending && m.variables !== undefined ? m.variables : env.requireApproval;
  if (!admin) return <span>{on ? 'Required' : 'Not required'}</span>;
  return (
    <div className="flag-switch">
      <Switch aria-label={`Require approval in ${env.name}`} isSelected={on} isDisabled={m.isPending || readOnly !== null} onChange={(v) => m.mutate(v)}>
        <div className="indicator" aria-hidden="true" />
        <span aria-hidden="true">{on ? 'Required' : 'Off'}</span>
      </Switch>
      {m.error ? <ErrorState error={m.error} /> : null}
    </div>
  );
}

export function Environments() {
  const { scope } = useSignedIn();
  const readOnly = useReadOnly();
  const qc = useQueryClient();
  const q = useEnvironments(scope);
  const [key, setKey] = useState('');
  const [name, setName] = useState('');
  const m = useMutation({
    mutationFn: async () => (await request<Environment>('POST', '/api/environments', { ...scope, environment: undefined }, { key, name })).body,
    onSuccess: () => {
      setKey('');
      setName('');
      void qc.invalidateQueries({ queryKey: ['environments', scope.tenantId] });
    },
  });
  return (
    <section aria-labelledby="envs-title">
      <h1 id="envs-title">Environments</h1>
      <p className="muted">Every flag has its own on/off state, targets and rules in each environment; pick one with the Environment switcher above. Where approval is required, a change to a flag goes through a change request that another member approves.</p>
      {q.isPending && <Loading what="environments" />}
      {q.error && <ErrorState error={q.error} onRetry={() => void q.refetch()} />}
      {q.data && q.data.length === 0 && <Empty>No environments.</Empty>}
      {q.data && q.data.length > 0 && (
        <table>
          <caption className="visually-hidden">Environments of this tenant</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Key (X-Environment)</th>
              <th scope="col">Created</th>
              <th scope="col">Require approval</th>
            </tr>
          </thead>
          <tbody>
            {q.data.map((e) => (
              <tr key={e.key}>
                <td>{e.name}</td>
                <td>
                  <code>{e.key}</code>
                </td>
                <td>{new Date(e.createdAt).toLocaleDateString()}</td>
                <td>
                  <RequireApproval env={e} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <div className="panel">
        <h2>Add an environment</h2>
        <MutationForm label="Add an environment" mutation={m} submit="Add environment" disabled={!!readOnly}>
          <TextInput label="Environment key" name="key" value={key} onChange={setKey} isDisabled={!!readOnly} validate={(v) => (v === '' || ENV_KEY.test(v) ? null : 'Lowercase letters, digits and dashes; up to 63.')} />
          <TextInput label="Environment name" name="name" value={name} onChange={setName} isDisabled={!!readOnly} />
        </MutationForm>
      </div>
    </section>
  );
}
