import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import { Button, FieldError, Form, Input, Label, Radio, RadioGroup, Text, TextArea, TextField } from 'react-aria-components';
import { formatValue, isApiError, request, USER_KIND, type EvaluationResult, type Flag, type JsonValue, type RequestScope } from '../api';
import { kindsOfContext, matchedKind, parseContext, type ContextObject } from './context';
import { ErrorState } from './States';

const MULTI_EXAMPLE = JSON.stringify({ kind: 'multi', user: { key: 'user-1', country: 'NO' }, organization: { key: 'acme', plan: 'enterprise' } }, null, 2);

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
  const clauses = rule.clauses
    .map((c) => `${c.contextKind && c.contextKind !== 'user' ? `${c.contextKind} ` : ''}${c.op === 'segmentMatch' ? 'is' : c.attribute} ${c.negate ? 'not ' : ''}${c.op === 'segmentMatch' ? 'in segment' : c.op} ${c.values.map((v) => JSON.stringify(v)).join(', ')}`)
    .join(' and ');
  return `Rule ${index + 1}${rule.description ? `: ${rule.description}` : ''} (${clauses || 'no clauses'})`;
}

/**
 * What the server refused in a context it was sent, as one line for the context field: a 400
 * invalid-context names the field (`context`, `context.organization.key`), and the field is where the
 * person fixes it. The checks here catch most of these first; the server's own (a cap on kinds) remain.
 */
function serverContextProblem(error: unknown): string | null {
  if (!isApiError(error) || error.status !== 400) return null;
  const entries = Object.entries(error.fieldErrors).filter(([field]) => field === 'context' || field.startsWith('context.'));
  return entries.length > 0 ? entries.map(([field, message]) => `${field}: ${message}`).join('; ') : null;
}

/**
 * The evaluation playground: a context in, the server's answer out (POST /api/flags/{key}/evaluate).
 * The context is a user key and attributes (the route makes them a `user` context), or a whole
 * LaunchDarkly context as JSON (any kind, or multi-kind), sent as the body's `context`.
 */
export function Playground({ flag, scope }: { flag: Flag; scope: RequestScope }) {
  const [mode, setMode] = useState<'user' | 'json'>('user');
  const [contextKey, setContextKey] = useState('user-1');
  const [attributes, setAttributes] = useState('{\n  "country": "NO"\n}');
  const [contextText, setContextText] = useState(MULTI_EXAMPLE);
  const attrs = parseAttributes(attributes);
  const parsed = parseContext(contextText);
  const problem = mode === 'user' ? (typeof attrs === 'string' ? attrs : null) : 'error' in parsed ? parsed.error : null;
  const m = useMutation({
    mutationFn: async (): Promise<{ result: EvaluationResult; context: ContextObject }> => {
      if (problem !== null) throw new Error(problem);
      // The route makes userId and attributes a user, whatever an attribute `kind` says; the kind shown is that one.
      const context: ContextObject = mode === 'user' ? { ...(attrs as ContextObject), key: contextKey, kind: USER_KIND } : (parsed as { context: ContextObject }).context;
      const body = mode === 'user' ? { userId: contextKey, attributes: attrs } : { context };
      return { result: (await request<EvaluationResult>('POST', `/api/flags/${encodeURIComponent(flag.key)}/evaluate`, { ...scope, environment: flag.environment }, body)).body, context };
    },
  });
  const refused = mode === 'json' ? serverContextProblem(m.error) : null;
  const r = m.data?.result;
  const kind = m.data && r ? matchedKind(flag, r, m.data.context) : null;
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
        <RadioGroup value={mode} onChange={(v) => setMode(v as 'user' | 'json')} orientation="horizontal">
          <Label>Context</Label>
          <Radio value="user">A user key and attributes</Radio>
          <Radio value="json">A context as JSON (any kind, multi-kind)</Radio>
        </RadioGroup>
        {mode === 'user' ? (
          <>
            <TextField name="contextKey" value={contextKey} onChange={setContextKey}>
              <Label>Context key</Label>
              <Input />
            </TextField>
            <TextField name="attributes" value={attributes} onChange={setAttributes} validate={() => (typeof attrs === 'string' ? attrs : null)} validationBehavior="aria">
              <Label>Attributes (JSON)</Label>
              <TextArea rows={5} className="react-aria-TextArea code" />
              <FieldError />
            </TextField>
          </>
        ) : (
          <TextField
            name="context"
            value={contextText}
            onChange={(text) => {
              setContextText(text);
              // The server's refusal was of the text sent; an edit is a new context.
              if (m.isError) m.reset();
            }}
            validate={() => problem ?? refused}
            validationBehavior="aria"
          >
            <Label>Context (JSON)</Label>
            <TextArea rows={9} className="react-aria-TextArea code" />
            <FieldError />
            {'context' in parsed && (
              <Text slot="description" className="muted">
                Kinds: {[...kindsOfContext(parsed.context).keys()].join(', ')}
              </Text>
            )}
          </TextField>
        )}
        <Button type="submit" className="primary" isDisabled={m.isPending || problem !== null}>
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
          <dt>Matched context kind</dt>
          <dd data-testid="eval-kind">{kind ?? '—'}</dd>
        </dl>
      )}
    </section>
  );
}
