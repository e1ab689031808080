import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import { Button, FieldError, Form, Input, Label, TextArea, TextField } from 'react-aria-components';
import { formatValue, request, type EvaluationResult, type Flag, type JsonValue, type RequestScope } from '../api';
import { ErrorState } from './States';

function parseAttributes(text: string): Record<string, JsonValue> | string {
  if (text.trim() === '') return {};
  try {
    const v = JSON.parse(text) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, JsonValue>) : 'Attributes must be a JSON object.';
  } catch {
    return 'Attributes must be valid JSON.';
  }
}

/** What a rule does, in words: its description, else its clauses. */
export function describeRule(flag: Flag, index: number): string {
  const rule = flag.rules[index];
  if (!rule) return `rule ${index + 1}`;
  const clauses = rule.clauses.map((c) => `${c.attribute} ${c.negate ? 'not ' : ''}${c.op} ${c.values.map((v) => JSON.stringify(v)).join(', ')}`).join(' and ');
  return `Rule ${index + 1}${rule.description ? `: ${rule.description}` : ''} (${clauses || 'no clauses'})`;
}

/** The evaluation playground: a context in, the server's answer out (POST /api/flags/{key}/evaluate). */
export function Playground({ flag, scope }: { flag: Flag; scope: RequestScope }) {
  const [contextKey, setContextKey] = useState('user-1');
  const [attributes, setAttributes] = useState('{\n  "country": "NO"\n}');
  const attrs = parseAttributes(attributes);
  const m = useMutation({
    mutationFn: async () => {
      if (typeof attrs === 'string') throw new Error(attrs);
      const body = { userId: contextKey, attributes: attrs };
      return (await request<EvaluationResult>('POST', `/api/flags/${encodeURIComponent(flag.key)}/evaluate`, { ...scope, environment: flag.environment }, body)).body;
    },
  });
  const r = m.data;
  const variation = r?.variationId ? flag.variations.find((v) => v.id === r.variationId) : undefined;
  return (
    <section aria-labelledby="playground-title" className="panel">
      <h2 id="playground-title">Evaluation playground</h2>
      <Form
        onSubmit={(e) => {
          e.preventDefault();
          m.mutate();
        }}
      >
        <TextField name="contextKey" value={contextKey} onChange={setContextKey}>
          <Label>Context key</Label>
          <Input />
        </TextField>
        <TextField name="attributes" value={attributes} onChange={setAttributes} validate={() => (typeof attrs === 'string' ? attrs : null)} validationBehavior="aria">
          <Label>Attributes (JSON)</Label>
          <TextArea rows={5} className="react-aria-TextArea code" />
          <FieldError />
        </TextField>
        <Button type="submit" className="primary" isDisabled={m.isPending || typeof attrs === 'string'}>
          Evaluate
        </Button>
      </Form>
      {m.isPending && (
        <p role="status" className="state">
          Evaluating…
        </p>
      )}
      {m.error && <ErrorState error={m.error} />}
      {r && (
        <dl className="result" aria-label="Evaluation result">
          <dt>Value</dt>
          <dd>
            <code data-testid="eval-value">{formatValue(r.value)}</code>
          </dd>
          <dt>Reason</dt>
          <dd data-testid="eval-reason">
            {r.reason}
            {r.errorKind ? ` (${r.errorKind})` : ''}
          </dd>
          <dt>Variation</dt>
          <dd>{variation ? variation.name : '—'}</dd>
          <dt>Matched rule</dt>
          <dd data-testid="eval-rule">{r.ruleIndex !== undefined ? describeRule(flag, r.ruleIndex) : 'none'}</dd>
        </dl>
      )}
    </section>
  );
}
