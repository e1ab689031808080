import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { request, type Environment } from '../api';
import { MutationForm, TextInput } from '../components/MutationForm';
import { Empty, ErrorState, Loading } from '../components/States';
import { useEnvironments } from '../queries';
import { useReadOnly } from '../read-only';
import { useSignedIn } from '../session';

const ENV_KEY = /^[a-z0-9][a-z0-9-]{0,62}$/;

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
      <p className="muted">Every flag has its own on/off state, targets and rules in each environment; pick one with the Environment switcher above.</p>
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
