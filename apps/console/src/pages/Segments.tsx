import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Button, Form, Input, Label, TextArea, TextField } from 'react-aria-components';
import { Link, useLocation } from 'wouter';
import { isApiError, request, type Segment } from '../api';
import { SegmentEditor, segmentQueryKey, segmentsQueryKey } from '../components/segments/SegmentEditor';
import { countKeys } from '../components/segments/segment-draft';
import { Empty, ErrorState, Loading } from '../components/States';
import { SavedWarnings } from '../components/targeting/Problems';
import { useSegment, useSegments } from '../queries';
import { useReadOnly } from '../read-only';
import { useSignedIn } from '../session';

/** Why the signed-in user may not change segments here (a viewer, an expired sandbox), or null. */
export function useSegmentsReadOnly(): string | null {
  const { tenants, tenantId } = useSignedIn();
  const tenantReadOnly = useReadOnly();
  const role = tenants.find((t) => t.tenant_id === tenantId)?.role;
  return tenantReadOnly ?? (role === 'viewer' ? 'Viewers can read segments, not change them.' : null);
}

/** The environment's segments: key, name and how many keys and rules each holds; and a form to create one. */
export function Segments() {
  const { scope, environment } = useSignedIn();
  const segments = useSegments(scope);
  const readOnly = useSegmentsReadOnly();
  return (
    <section aria-labelledby="segments-title">
      <div className="page-head">
        <h1 id="segments-title">Segments in {environment}</h1>
      </div>
      <p className="muted">A segment is a reusable list of contexts (keys per kind, and rules); flags target it with the “is in segment” operator.</p>
      {readOnly && <p className="state">{readOnly}</p>}
      {segments.isPending && <Loading what="segments" />}
      {segments.isError && <ErrorState error={segments.error} onRetry={() => void segments.refetch()} />}
      {segments.isSuccess && segments.data.length === 0 && (
        <Empty>
          <p>No segments yet in {environment}.</p>
        </Empty>
      )}
      {segments.isSuccess && segments.data.length > 0 && (
        <table className="flags segments">
          <caption className="visually-hidden">Segments in {environment}</caption>
          <thead>
            <tr>
              <th scope="col">Segment</th>
              <th scope="col">Included</th>
              <th scope="col">Excluded</th>
              <th scope="col">Rules</th>
            </tr>
          </thead>
          <tbody>
            {segments.data.map((s) => {
              const n = countKeys(s);
              return (
                <tr key={s.key}>
                  <td>
                    <Link href={`/segments/${encodeURIComponent(s.key)}`}>{s.name}</Link>
                    <div className="muted">
                      <code>{s.key}</code>
                    </div>
                  </td>
                  <td>{n.included}</td>
                  <td>{n.excluded}</td>
                  <td>{s.rules.length}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {!readOnly && <CreateSegment />}
    </section>
  );
}

function CreateSegment() {
  const { scope } = useSignedIn();
  const qc = useQueryClient();
  const [, navigate] = useLocation();
  const [key, setKey] = useState('');
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const create = useMutation({
    mutationFn: async () => {
      const r = await request<Segment>('POST', '/api/segments', scope, { key: key.trim(), name: name.trim(), description });
      return { segment: r.body, etag: r.etag ?? `"${r.body.version}"` };
    },
    onSuccess: (made) => {
      qc.setQueryData(segmentQueryKey(scope, made.segment.key), made);
      void qc.invalidateQueries({ queryKey: segmentsQueryKey(scope) });
      navigate(`/segments/${encodeURIComponent(made.segment.key)}`);
    },
  });
  const fieldError = (f: string) => (isApiError(create.error) ? create.error.fieldErrors[f] : undefined);
  return (
    <section className="panel" aria-labelledby="create-segment-title">
      <h2 id="create-segment-title">Create a segment</h2>
      <Form
        onSubmit={(e) => {
          e.preventDefault();
          create.mutate();
        }}
        validationErrors={{ ...(fieldError('key') ? { key: fieldError('key')! } : {}), ...(fieldError('name') ? { name: fieldError('name')! } : {}) }}
        className="form-grid"
      >
        <TextField name="key" value={key} onChange={setKey} isRequired>
          <Label>Key</Label>
          <Input placeholder="beta-customers" />
        </TextField>
        <TextField name="name" value={name} onChange={setName} isRequired>
          <Label>Name</Label>
          <Input />
        </TextField>
        <TextField name="description" value={description} onChange={setDescription}>
          <Label>Description</Label>
          <TextArea rows={2} />
        </TextField>
        <Button type="submit" className="react-aria-Button primary" isDisabled={create.isPending || key.trim() === '' || name.trim() === ''}>
          {create.isPending ? 'Creating…' : 'Create segment'}
        </Button>
      </Form>
      {create.error && <ErrorState error={create.error} hint={isApiError(create.error) ? Object.entries(create.error.fieldErrors).map(([k, v]) => `${k}: ${v}`).join('; ') || undefined : undefined} />}
    </section>
  );
}

/** One segment's page: the editor (read only for viewers). */
export function SegmentDetail({ segmentKey }: { segmentKey: string }) {
  const { scope } = useSignedIn();
  const q = useSegment(scope, segmentKey);
  const readOnly = useSegmentsReadOnly();
  return (
    <article aria-labelledby="segment-title">
      <p>
        <Link href="/segments">← All segments</Link>
      </p>
      {q.isPending && <Loading what="the segment" />}
      {q.isError && <ErrorState error={q.error} onRetry={() => void q.refetch()} />}
      {q.isSuccess && (
        <>
          <div className="page-head">
            <h1 id="segment-title">{q.data.segment.name}</h1>
          </div>
          {readOnly && <p className="state">{readOnly}</p>}
          <SavedWarnings what="segment" warnings={q.data.segment.warnings} />
          <SegmentEditor key={q.data.segment.environment} segment={q.data.segment} etag={q.data.etag} scope={scope} readOnly={readOnly !== null} />
        </>
      )}
    </article>
  );
}
