import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Button } from 'react-aria-components';
import { request } from '../api';
import { CheckList } from '../components/CheckList';
import { ConfirmButton } from '../components/Confirm';
import { SecretOnce } from '../components/SecretOnce';
import { MutationForm, TextInput } from '../components/MutationForm';
import { Empty, ErrorState, Loading } from '../components/States';
import { useReadOnly } from '../read-only';
import { useSignedIn } from '../session';
import { PRODUCT_KEYS, SCOPES, useOAuthClients, type OAuthClient, type OAuthClientWithSecret } from '../tenant-queries';
import { TableHead } from '../components/TableHead';

function CreateClient({ onCreated }: { onCreated: (c: OAuthClientWithSecret) => void }) {
  const { scope } = useSignedIn();
  const readOnly = useReadOnly();
  const qc = useQueryClient();
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<string[]>(['flags:read', 'flags:evaluate']);
  const [productKeys, setProductKeys] = useState<string[]>(['core']);
  const m = useMutation({
    mutationFn: async () =>
      (await request<OAuthClientWithSecret>('POST', '/api/oauth/clients', { ...scope, environment: undefined }, { name: name.trim(), scopes, productKeys })).body,
    onSuccess: (c) => {
      setName('');
      void qc.invalidateQueries({ queryKey: ['oauth-clients', scope.tenantId] });
      onCreated(c);
    },
  });
  return (
    <div className="panel">
      <h2>Create an OAuth client</h2>
      <MutationForm label="Create an OAuth client" mutation={m} submit="Create client" disabled={!!readOnly}>
        <TextInput label="Client name" name="name" value={name} onChange={setName} isDisabled={!!readOnly} validate={(v) => (v.trim() === '' ? 'Enter a name.' : null)} />
        <CheckList
          label="Scopes"
          name="scopes"
          options={SCOPES}
          value={scopes}
          onChange={setScopes}
          isDisabled={!!readOnly}
          validate={(v) => (v.length === 0 ? 'Choose at least one scope.' : null)}
          note={(s) => s === 'ai:invoke' && <span className="muted"> (AI gateway: spends the tenant&apos;s credits)</span>}
        />
        <CheckList
          label="Product keys (gateway)"
          name="productKeys"
          options={PRODUCT_KEYS}
          value={productKeys}
          onChange={setProductKeys}
          isDisabled={!!readOnly}
          note={(k) => k !== 'core' && <span className="muted"> (internal, platform admins only)</span>}
        />
      </MutationForm>
    </div>
  );
}

function ClientRow({ client, onSecret }: { client: OAuthClient; onSecret: (c: OAuthClientWithSecret) => void }) {
  const { scope } = useSignedIn();
  const readOnly = useReadOnly();
  const qc = useQueryClient();
  const tenantScope = { ...scope, environment: undefined };
  const path = `/api/oauth/clients/${encodeURIComponent(client.clientId)}`;
  const rotate = useMutation({
    mutationFn: async () => (await request<OAuthClientWithSecret>('POST', `${path}/rotate-secret`, tenantScope)).body,
    onSuccess: (c) => {
      void qc.invalidateQueries({ queryKey: ['oauth-clients', scope.tenantId] });
      onSecret(c);
    },
  });
  const remove = useMutation({
    mutationFn: async () => (await request<unknown>('DELETE', path, tenantScope)).body,
    onSuccess: () => void qc.invalidateQueries({ queryKey: ['oauth-clients', scope.tenantId] }),
  });
  const error = rotate.error ?? remove.error;
  return (
    <tr>
      <td>
        {client.name}
        <br />
        <code className="muted">{client.clientId}</code>
      </td>
      <td>{client.scopes.join(', ') || '—'}</td>
      <td>{client.productKeys.join(', ') || '—'}</td>
      <td>{new Date(client.secretRotatedAt ?? client.createdAt).toLocaleString()}</td>
      <td>
        <div className="actions">
          <Button aria-label={`Rotate secret of ${client.name}`} isDisabled={rotate.isPending || !!readOnly} onPress={() => rotate.mutate()}>
            Rotate secret
          </Button>
          <ConfirmButton
            label={`Delete ${client.name}`}
            title={`Delete ${client.name}? Tokens already issued to it stop working within seconds.`}
            confirm="Delete client"
            isDisabled={remove.isPending || !!readOnly}
            onConfirm={() => remove.mutate()}
          >
            Delete
          </ConfirmButton>
        </div>
        {error && <ErrorState error={error} />}
      </td>
    </tr>
  );
}

export function OAuthClients() {
  const { scope } = useSignedIn();
  const q = useOAuthClients(scope);
  const [secret, setSecret] = useState<OAuthClientWithSecret | null>(null);
  return (
    <section aria-labelledby="clients-title">
      <h1 id="clients-title">OAuth clients</h1>
      <p className="muted">
        Machine access for your backends: exchange the client id and secret at <code>POST /oauth/token</code> (client credentials) for an access token to the
        API and the AI gateway.
      </p>
      {secret && (
        <SecretOnce
          title={`Secret of ${secret.name}`}
          warning={
            <>
              <strong>Copy this secret now.</strong> It is shown only once: Flagship keeps only a hash of it. Store it in a secrets manager, never in frontend
              code; if it is lost, rotate it.
            </>
          }
          fields={[{ label: 'Client id', value: secret.clientId, testId: 'client-id' }]}
          secretLabel="Client secret"
          secret={secret.clientSecret}
          secretTestId="client-secret"
          onDone={() => setSecret(null)}
        />
      )}
      {q.isPending && <Loading what="OAuth clients" />}
      {q.error && <ErrorState error={q.error} onRetry={() => void q.refetch()} hint="OAuth clients need the admin role in this tenant." />}
      {q.data && q.data.length === 0 && <Empty>No OAuth clients yet.</Empty>}
      {q.data && q.data.length > 0 && (
        <table>
          <caption className="visually-hidden">OAuth clients of this tenant</caption>
          <TableHead columns={['Client', 'Scopes', 'Product keys', 'Secret set']} actions />
          <tbody>
            {q.data.map((c) => (
              <ClientRow key={c.clientId} client={c} onSecret={setSecret} />
            ))}
          </tbody>
        </table>
      )}
      <CreateClient onCreated={setSecret} />
    </section>
  );
}
