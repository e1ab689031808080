import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Button } from 'react-aria-components';
import { request } from '../api';
import { CheckList } from '../components/CheckList';
import { ConfirmButton } from '../components/Confirm';
import { ListTable } from '../components/ListTable';
import { MutationForm, TextInput } from '../components/MutationForm';
import { SecretOnce } from '../components/SecretOnce';
import { Empty, ErrorState, Loading } from '../components/States';
import { useReadOnly } from '../read-only';
import { timeAgo } from '../relative-time';
import { useSignedIn } from '../session';
import { DELIVERIES_SHOWN, useWebhookDeliveries, useWebhooks, type Webhook, type WebhookDelivery, type WebhookEventType, type WebhookWithSecret } from '../tenant-queries';

/** When each event is sent (docs/webhooks.md); a Record, so an event the SDK adds fails the type check until it is described here. */
const WHEN: Record<WebhookEventType, string> = {
  'flag.created': 'a flag is created',
  'flag.updated': 'its settings or targeting change',
  'flag.deleted': 'a flag is deleted',
  'segment.updated': 'a segment is created, changed or deleted',
  'environment.updated': 'an environment is created or changed',
  'member.updated': 'a member joins, changes role or leaves',
  'credits.low': 'the AI credit balance runs low',
  'budget.exceeded': 'an AI budget passes its cap',
};
const WEBHOOK_EVENTS = Object.keys(WHEN) as WebhookEventType[];

const at = (iso: string) => new Date(iso).toLocaleString();

function CreateWebhook({ onCreated }: { onCreated: (w: WebhookWithSecret) => void }) {
  const { scope } = useSignedIn();
  const readOnly = useReadOnly();
  const qc = useQueryClient();
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<WebhookEventType[]>(['flag.created', 'flag.updated', 'flag.deleted']);
  const [description, setDescription] = useState('');
  const m = useMutation({
    mutationFn: async () =>
      (await request<WebhookWithSecret>('POST', '/api/webhooks', { ...scope, environment: undefined }, { url: url.trim(), events, description: description.trim() })).body,
    onSuccess: (w) => {
      setUrl('');
      setDescription('');
      void qc.invalidateQueries({ queryKey: ['webhooks', scope.tenantId], exact: true });
      onCreated(w);
    },
  });
  return (
    <div className="panel">
      <h2>Add a webhook</h2>
      <MutationForm label="Add a webhook" mutation={m} submit="Add webhook" disabled={!!readOnly}>
        <TextInput label="Endpoint URL" name="url" value={url} onChange={setUrl} isDisabled={!!readOnly} validate={(v) => (/^https?:\/\/\S+$/.test(v.trim()) ? null : 'Enter an absolute URL (https://...).')} />
        <CheckList
          label="Events"
          name="events"
          options={WEBHOOK_EVENTS}
          value={events}
          onChange={setEvents}
          isDisabled={!!readOnly}
          validate={(v) => (v.length === 0 ? 'Choose at least one event.' : null)}
          note={(e) => <span className="muted"> ({WHEN[e]})</span>}
        />
        <TextInput label="Description" name="description" value={description} onChange={setDescription} isRequired={false} isDisabled={!!readOnly} />
      </MutationForm>
    </div>
  );
}

function State({ webhook }: { webhook: Webhook }) {
  if (webhook.enabled) return <>Enabled</>;
  return (
    <>
      <strong>Disabled</strong>
      {webhook.disabledAt && <> since {at(webhook.disabledAt)}</>}
      {webhook.disabledReason && <div className="muted">{webhook.disabledReason}</div>}
      <div className="muted">Delete it and add it again once the receiver is fixed.</div>
    </>
  );
}

function WebhookRow({ webhook, open, onToggle }: { webhook: Webhook; open: boolean; onToggle: () => void }) {
  const { scope } = useSignedIn();
  const readOnly = useReadOnly();
  const qc = useQueryClient();
  const remove = useMutation({
    mutationFn: async () => (await request<unknown>('DELETE', `/api/webhooks/${encodeURIComponent(webhook.id)}`, { ...scope, environment: undefined })).body,
    onSuccess: () => {
      // Its log is gone with it: dropped, not refetched (a 404) while the list catches up.
      qc.removeQueries({ queryKey: ['webhooks', scope.tenantId, webhook.id] });
      void qc.invalidateQueries({ queryKey: ['webhooks', scope.tenantId], exact: true });
    },
  });
  return (
    <tr>
      <td>
        <code>{webhook.url}</code>
        {webhook.description && <div className="muted">{webhook.description}</div>}
      </td>
      <td>{webhook.events.join(', ')}</td>
      <td>
        <State webhook={webhook} />
      </td>
      <td>{webhook.droppedEvents}</td>
      <td>
        <div className="actions">
          <Button aria-label={`Deliveries of ${webhook.url}`} aria-expanded={open} onPress={onToggle}>
            {open ? 'Hide deliveries' : 'Deliveries'}
          </Button>
          <ConfirmButton
            label={`Delete webhook ${webhook.url}`}
            title={`Delete the webhook to ${webhook.url}? Its delivery log goes with it, and what was not yet sent is dropped.`}
            confirm="Delete webhook"
            isDisabled={remove.isPending || !!readOnly}
            onConfirm={() => remove.mutate()}
          >
            Delete
          </ConfirmButton>
        </div>
        {remove.error ? <ErrorState error={remove.error} /> : null}
      </td>
    </tr>
  );
}

/** One delivery: what it carried, where it stands, each attempt, and a replay (same webhook-id). */
function DeliveryRow({ webhook, delivery }: { webhook: Webhook; delivery: WebhookDelivery }) {
  const { scope } = useSignedIn();
  const readOnly = useReadOnly();
  const qc = useQueryClient();
  const replay = useMutation({
    mutationFn: async () =>
      (await request<unknown>('POST', `/api/webhooks/${encodeURIComponent(webhook.id)}/deliveries/${encodeURIComponent(delivery.id)}/replay`, { ...scope, environment: undefined })).body,
    onSuccess: () => void qc.invalidateQueries({ queryKey: ['webhooks', scope.tenantId, webhook.id, 'deliveries'] }),
  });
  return (
    <tr>
      <td>
        <code>{delivery.type}</code>
        <div className="muted">
          <time dateTime={delivery.createdAt} title={at(delivery.createdAt)}>
            {timeAgo(delivery.createdAt)}
          </time>
        </div>
        <div className="muted">
          id <code>{delivery.id}</code>
        </div>
      </td>
      <td>
        <span className={`badge ${delivery.status}`}>{delivery.status}</span>
        {delivery.status === 'pending' && delivery.nextAttemptAt && <div className="muted">next attempt {at(delivery.nextAttemptAt)}</div>}
      </td>
      <td>
        {delivery.attempts.length === 0 ? (
          <span className="muted">No attempt yet: billing-worker sends it.</span>
        ) : (
          <ol className="attempts">
            {delivery.attempts.map((a) => (
              <li key={a.attempt}>
                {at(a.attemptedAt)}: {a.outcome}
                {a.responseCode !== null && <> · HTTP {a.responseCode}</>} · {a.durationMs} ms
                {a.error && <div className="muted">{a.error}</div>}
              </li>
            ))}
          </ol>
        )}
      </td>
      <td>
        <Button aria-label={`Replay delivery ${delivery.id}`} isDisabled={replay.isPending || !!readOnly || !webhook.enabled} onPress={() => replay.mutate()}>
          Replay
        </Button>
        {replay.isSuccess && (
          <p role="status" className="muted">
            Queued again, with the same webhook-id.
          </p>
        )}
        {replay.error ? <ErrorState error={replay.error} /> : null}
      </td>
    </tr>
  );
}

function Deliveries({ webhook }: { webhook: Webhook }) {
  const { scope } = useSignedIn();
  const q = useWebhookDeliveries(scope, webhook.id);
  const title = `Deliveries to ${webhook.url}`;
  return (
    <div className="panel" role="region" aria-label={title}>
      <h2>{title}</h2>
      <p className="muted">
        The newest {DELIVERIES_SHOWN}, newest first. A failed attempt is retried for a day; a replay sends the body again with the same{' '}
        <code>webhook-id</code>, so a receiver that deduplicates on it sees it once.
        {!webhook.enabled && ' The webhook is disabled: nothing is sent or replayed.'}
      </p>
      {q.isPending && <Loading what="deliveries" />}
      {q.error ? <ErrorState error={q.error} onRetry={() => void q.refetch()} /> : null}
      {q.data && q.data.length === 0 && <Empty>No deliveries yet: they appear when a subscribed event happens.</Empty>}
      {q.data && q.data.length > 0 && (
        <ListTable caption={title} columns={['Event', 'Status', 'Attempts']} actions>
          {q.data.map((d) => (
            <DeliveryRow key={d.id} webhook={webhook} delivery={d} />
          ))}
        </ListTable>
      )}
    </div>
  );
}

export function Webhooks() {
  const { scope, tenants, tenantId } = useSignedIn();
  const isAdmin = tenants.find((t) => t.tenant_id === tenantId)?.role === 'admin';
  const q = useWebhooks(scope, isAdmin);
  const [secret, setSecret] = useState<WebhookWithSecret | null>(null);
  const [openId, setOpenId] = useState<string | null>(null);
  const open = q.data?.find((w) => w.id === openId);
  return (
    <section aria-labelledby="webhooks-title">
      <h1 id="webhooks-title">Webhooks</h1>
      <p className="muted">
        Flagship calls your URLs when flags, segments, environments, members or credits change. Deliveries follow Standard Webhooks: verify them with the{' '}
        <code>standardwebhooks</code> or <code>svix</code> library and the webhook&apos;s signing secret.
      </p>
      {!isAdmin ? (
        <p className="notice" role="note">
          Webhooks are managed by the tenant&apos;s admins: ask an admin of this tenant to add or change one.
        </p>
      ) : (
        <>
          {secret && (
            <SecretOnce
              title={`Signing secret of ${secret.url}`}
              warning={
                <>
                  <strong>Copy this secret now: you will not see it again.</strong> Your receiver verifies each delivery&apos;s <code>webhook-signature</code>{' '}
                  with it. If it is lost, delete the webhook and add it again.
                </>
              }
              secretLabel="Signing secret"
              secret={secret.secret}
              onDone={() => setSecret(null)}
            />
          )}
          {q.isPending && <Loading what="webhooks" />}
          {q.error ? <ErrorState error={q.error} onRetry={() => void q.refetch()} /> : null}
          {q.data && q.data.length === 0 && <Empty>No webhooks yet.</Empty>}
          {q.data && q.data.length > 0 && (
            <ListTable caption="Webhooks of this tenant" columns={['Endpoint', 'Events', 'State', 'Dropped events']} actions>
              {q.data.map((w) => (
                <WebhookRow key={w.id} webhook={w} open={w.id === openId} onToggle={() => setOpenId(w.id === openId ? null : w.id)} />
              ))}
            </ListTable>
          )}
          {open && <Deliveries webhook={open} />}
          <CreateWebhook onCreated={setSecret} />
        </>
      )}
    </section>
  );
}
