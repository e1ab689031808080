import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { Project } from '@flagship/sdk';
import { useState } from 'react';
import { Button, FieldError, Form, Input, Label, Radio, RadioGroup, TextArea, TextField } from 'react-aria-components';
import { useLocation } from 'wouter';
import { FLAG_TYPES, isApiError, request, type Flag, type FlagType, type JsonValue } from '../api';
import { ErrorState } from '../components/States';
import { ChoiceSelect } from '../components/ChoiceSelect';
import { useSignedIn } from '../session';

const KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const NO_PROJECT = ' none';

interface VariationRow {
  id: number;
  name: string;
  text: string;
  description: string;
}

/** The default value as typed, checked against the flag's type; a message when it does not fit. */
export function parseDefault(type: FlagType, text: string, bool: boolean): { value: JsonValue } | { error: string } {
  switch (type) {
    case 'boolean':
      return { value: bool };
    case 'string':
      return { value: text };
    case 'number': {
      const n = Number(text);
      return text.trim() === '' || !Number.isFinite(n) ? { error: 'Enter a number.' } : { value: n };
    }
    case 'json':
      try {
        const v = JSON.parse(text) as JsonValue;
        return typeof v === 'object' && v !== null ? { value: v } : { error: 'Enter a JSON object or array.' };
      } catch {
        return { error: 'Enter valid JSON.' };
      }
  }
}

export function CreateFlag() {
  const { scope } = useSignedIn();
  const qc = useQueryClient();
  const [, navigate] = useLocation();
  const [key, setKey] = useState('');
  const [name, setName] = useState('');
  const [type, setType] = useState<FlagType>('boolean');
  const [text, setText] = useState('');
  const [bool, setBool] = useState(false);
  const [description, setDescription] = useState('');
  const [tags, setTags] = useState('');
  const [projectId, setProjectId] = useState(NO_PROJECT);
  const [rows, setRows] = useState<VariationRow[]>([]);
  const parsed = parseDefault(type, text, bool);
  const projects = useQuery({
    queryKey: ['projects', scope.tenantId],
    queryFn: async () => (await request<Project[]>('GET', '/api/projects', { ...scope, environment: undefined })).body,
  });
  // Booleans always vary between true and false; the other types take the variations typed here
  // (none: the API makes one holding the default value).
  const variations = type === 'boolean' ? [] : rows.map((r) => ({ row: r, parsed: parseDefault(type, r.text, false) }));
  const setRow = (id: number, patch: Partial<VariationRow>) => setRows((rs) => rs.map((r) => (r.id === id ? { ...r, ...patch } : r)));

  const m = useMutation({
    mutationFn: async () => {
      if ('error' in parsed) throw new Error(parsed.error);
      const badVariation = variations.find((v) => 'error' in v.parsed);
      if (badVariation) throw new Error(`Variation ${badVariation.row.name || badVariation.row.id}: ${'error' in badVariation.parsed ? badVariation.parsed.error : ''}`);
      const body = {
        key,
        name,
        type,
        defaultValue: parsed.value,
        description: description || undefined,
        tags: tags.split(',').map((t) => t.trim()).filter((t) => t !== ''),
        projectId: projectId === NO_PROJECT ? undefined : projectId,
        flag_variations: variations.length ? variations.map((v) => ({ name: v.row.name, value: 'value' in v.parsed ? v.parsed.value : null, description: v.row.description || undefined })) : undefined,
      };
      return (await request<Flag>('POST', '/api/flags', scope, body)).body;
    },
    onSuccess: (flag) => {
      void qc.invalidateQueries({ queryKey: ['flags', scope.tenantId] });
      navigate(`/flags/${encodeURIComponent(flag.key)}`);
    },
  });

  return (
    <section aria-labelledby="create-title" className="narrow">
      <h1 id="create-title">Create a flag</h1>
      <Form
        validationErrors={isApiError(m.error) ? m.error.fieldErrors : undefined}
        onSubmit={(e) => {
          e.preventDefault();
          m.mutate();
        }}
      >
        <TextField name="key" isRequired value={key} onChange={setKey} validate={(v) => (v === '' || KEY_PATTERN.test(v) ? null : 'Letters, digits, dot, dash and underscore; starting with a letter or digit.')}>
          <Label>Key</Label>
          <Input />
          <FieldError />
        </TextField>
        <TextField name="name" isRequired value={name} onChange={setName}>
          <Label>Name</Label>
          <Input />
          <FieldError />
        </TextField>
        <ChoiceSelect label="Type" value={type} options={FLAG_TYPES.map((t) => ({ id: t, name: t }))} onChange={setType} />
        {type === 'boolean' ? (
          <RadioGroup value={String(bool)} onChange={(v) => setBool(v === 'true')} orientation="horizontal">
            <Label>Default value</Label>
            <Radio value="true">true</Radio>
            <Radio value="false">false</Radio>
          </RadioGroup>
        ) : (
          <TextField name="defaultValue" isRequired={type !== 'string'} value={text} onChange={setText} validate={() => ('error' in parsed ? parsed.error : null)}>
            <Label>Default value</Label>
            {type === 'json' ? <TextArea rows={4} /> : <Input inputMode={type === 'number' ? 'decimal' : undefined} />}
            <FieldError />
          </TextField>
        )}
        <TextField name="description" value={description} onChange={setDescription}>
          <Label>Description</Label>
          <TextArea rows={2} />
        </TextField>
        <TextField name="tags" value={tags} onChange={setTags}>
          <Label>Tags (comma-separated)</Label>
          <Input />
        </TextField>
        <ChoiceSelect
          label="Project"
          value={projectId}
          options={[{ id: NO_PROJECT, name: 'No project' }, ...(projects.data ?? []).map((p) => ({ id: p.id, name: p.name }))]}
          onChange={setProjectId}
        />
        {projects.isError && <p className="muted">Projects could not be loaded ({projects.error.message}); the flag can still be created without one.</p>}
        {type !== 'boolean' && (
          <fieldset aria-label="Variations">
            <legend>Variations</legend>
            {rows.length === 0 && <p className="muted">None: the flag gets one variation holding the default value.</p>}
            {variations.map(({ row, parsed: p }, i) => (
              <div key={row.id} className="variation-row" role="group" aria-label={`Variation ${i + 1}`}>
                <TextField value={row.name} onChange={(name) => setRow(row.id, { name })} isRequired>
                  <Label>Name</Label>
                  <Input />
                </TextField>
                <TextField value={row.text} onChange={(t) => setRow(row.id, { text: t })} isInvalid={'error' in p} isRequired={type !== 'string'}>
                  <Label>Value</Label>
                  <Input />
                  <FieldError>{'error' in p ? p.error : null}</FieldError>
                </TextField>
                <TextField value={row.description} onChange={(description) => setRow(row.id, { description })}>
                  <Label>Description</Label>
                  <Input />
                </TextField>
                <Button aria-label={`Remove variation ${i + 1}`} className="react-aria-Button small danger" onPress={() => setRows((rs) => rs.filter((r) => r.id !== row.id))}>
                  Remove
                </Button>
              </div>
            ))}
            <Button className="react-aria-Button small" onPress={() => setRows((rs) => [...rs, { id: (rs.at(-1)?.id ?? 0) + 1, name: `variation ${rs.length + 1}`, text: '', description: '' }])}>
              Add variation
            </Button>
          </fieldset>
        )}
        <div className="actions">
          <Button type="submit" className="primary" isDisabled={m.isPending}>
            Create flag
          </Button>
        </div>
      </Form>
      {m.error && <ErrorState error={m.error} />}
    </section>
  );
}
