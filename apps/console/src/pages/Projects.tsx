import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Button } from 'react-aria-components';
import { request } from '../api';
import { MutationForm, TextInput } from '../components/MutationForm';
import { Empty, ErrorState, Loading } from '../components/States';
import { useReadOnly } from '../read-only';
import { useSignedIn } from '../session';
import { useProjects, type Project } from '../tenant-queries';
import { TableHead } from '../components/TableHead';

const HEX = /^#[0-9a-fA-F]{6}$/;

/** Name and colour of a project, for create and edit alike. */
function ProjectForm({ initial, submitLabel, onSaved, onCancel }: { initial?: Project; submitLabel: string; onSaved?: () => void; onCancel?: () => void }) {
  const { scope } = useSignedIn();
  const readOnly = useReadOnly();
  const qc = useQueryClient();
  const [name, setName] = useState(initial?.name ?? '');
  const [color, setColor] = useState(initial?.color ?? '#2450c7');
  const m = useMutation({
    mutationFn: async () => {
      const body = { name: name.trim(), color };
      const tenantScope = { ...scope, environment: undefined };
      return initial
        ? (await request<Project>('PATCH', `/api/projects/${encodeURIComponent(initial.id)}`, tenantScope, body)).body
        : (await request<Project>('POST', '/api/projects', tenantScope, body)).body;
    },
    onSuccess: () => {
      void qc.invalidateQueries({ queryKey: ['projects', scope.tenantId] });
      if (!initial) {
        setName('');
      }
      onSaved?.();
    },
  });
  const idPrefix = initial ? `edit-${initial.id}` : 'new';
  return (
    <MutationForm
      className="react-aria-Form inline-form"
      label={initial ? `Edit project ${initial.name}` : 'Create a project'}
      mutation={m}
      submit={submitLabel}
      disabled={!!readOnly}
      actions={onCancel && <Button onPress={onCancel}>Cancel</Button>}
    >
      <TextInput label="Project name" name="name" value={name} onChange={setName} isDisabled={!!readOnly} validate={(v) => (v.trim() === '' ? 'Enter a name.' : null)} />
      <div className="react-aria-TextField">
        <label htmlFor={`${idPrefix}-color`} className="react-aria-Label">
          Colour
        </label>
        <div className="color-row">
          <input id={`${idPrefix}-color`} type="color" value={color} disabled={!!readOnly} onChange={(e) => setColor(e.target.value)} />
          <code>{HEX.test(color) ? color : '—'}</code>
        </div>
      </div>
    </MutationForm>
  );
}

export function Projects() {
  const { scope } = useSignedIn();
  const readOnly = useReadOnly();
  const q = useProjects(scope);
  const [editing, setEditing] = useState<string | null>(null);
  return (
    <section aria-labelledby="projects-title">
      <h1 id="projects-title">Projects</h1>
      {q.isPending && <Loading what="projects" />}
      {q.error && <ErrorState error={q.error} onRetry={() => void q.refetch()} />}
      {q.data && q.data.length === 0 && <Empty>No projects yet. Create one below to group your flags.</Empty>}
      {q.data && q.data.length > 0 && (
        <table>
          <caption className="visually-hidden">Projects of this tenant</caption>
          <TableHead columns={['Project', 'Colour', 'Flags']} actions />
          <tbody>
            {q.data.map((p) =>
              editing === p.id ? (
                <tr key={p.id}>
                  <td colSpan={4}>
                    <ProjectForm initial={p} submitLabel="Save project" onSaved={() => setEditing(null)} onCancel={() => setEditing(null)} />
                  </td>
                </tr>
              ) : (
                <tr key={p.id}>
                  <td>
                    <span className="swatch" style={{ background: p.color }} aria-hidden="true" /> {p.name}
                  </td>
                  <td>
                    <code>{p.color}</code>
                  </td>
                  <td data-testid="flag-count">{p.flagCount}</td>
                  <td>
                    <Button aria-label={`Edit ${p.name}`} isDisabled={!!readOnly} onPress={() => setEditing(p.id)}>
                      Edit
                    </Button>
                  </td>
                </tr>
              ),
            )}
          </tbody>
        </table>
      )}
      <div className="panel">
        <h2>Create a project</h2>
        <ProjectForm submitLabel="Create project" />
      </div>
    </section>
  );
}
