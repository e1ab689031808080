import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useEffect, useMemo, useState } from 'react';
import { Button, Checkbox, Input, Label, NumberField, TextArea, TextField } from 'react-aria-components';
import { useLocation } from 'wouter';
import { isApiError, request, USER_KIND, type RequestScope, type Segment, type SegmentRule } from '../../api';
import { useSegments } from '../../queries';
import { ConfirmButton } from '../Confirm';
import { ErrorState } from '../States';
import { ClauseList, newClause } from '../targeting/ClauseEditor';
import { checkSegment, problemsAt, type DraftCheck, type SegmentDraft } from '../targeting/checks';
import { ConflictNotice } from '../targeting/ConflictPanel';
import { ContextKindField, kindsToOffer } from '../targeting/ContextKindField';
import { sameJson } from '../targeting/draft';
import { Problems } from '../targeting/Problems';
import { KeysField, RemoveButton } from '../targeting/Sections';
import { SaveBar } from '../targeting/SaveBar';
import {
  changedSegmentFields,
  fromKeysByKind,
  keysByKind,
  percentToWeight,
  rebaseSegment,
  SEGMENT_FIELD_LABELS,
  SEGMENT_FIELDS,
  SEGMENT_WEIGHT_TOTAL,
  segmentDraftOf,
  weightToPercent,
  type KindKeys,
  type SegmentField,
} from './segment-draft';

export const segmentQueryKey = (scope: RequestScope, key: string) => ['segment', scope.tenantId, scope.environment, key];
export const segmentsQueryKey = (scope: RequestScope) => ['segments', scope.tenantId, scope.environment];

/** The 422's problems by path, each where the user can read it (the API's paths: `rules[0].clauses[1].op`). */
function FieldErrors({ error }: { error: unknown }) {
  if (!isApiError(error) || Object.keys(error.fieldErrors).length === 0) return null;
  return (
    <ul className="problems" aria-label="Problems the server found">
      {Object.entries(error.fieldErrors).map(([path, message]) => (
        <li key={path} className="problem-error">
          <strong>Error</strong> <code>{path}</code> {message}
        </li>
      ))}
    </ul>
  );
}

/**
 * A segment of one environment as a draft: name and description, included and excluded keys per
 * context kind, and rules (clauses, with LaunchDarkly's weight shown as a percentage). Saved in one
 * PATCH of the changed fields with If-Match; a 412 shows what changed on the server and lets the user
 * reapply their edits on it, as the flag editor does. Viewers (and read-only tenants) only read it.
 */
export function SegmentEditor({ segment, etag, scope, readOnly }: { segment: Segment; etag: string; scope: RequestScope; readOnly: boolean }) {
  const qc = useQueryClient();
  const [, navigate] = useLocation();
  const others = useSegments(scope).data?.filter((s) => s.key !== segment.key);
  const [base, setBase] = useState({ segment, etag });
  const [draft, setDraft] = useState<SegmentDraft>(() => segmentDraftOf(segment));
  const [revision, setRevision] = useState(0);
  const [server, setServer] = useState<{ segment: Segment; etag: string } | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const baseDraft = useMemo(() => segmentDraftOf(base.segment), [base]);
  const changes = useMemo(() => changedSegmentFields(baseDraft, draft), [baseDraft, draft]);
  const changed = Object.keys(changes) as SegmentField[];
  const check = useMemo(() => checkSegment(segment.key, draft), [segment.key, draft]);
  const kinds = useMemo(
    () => kindsToOffer([...draft.includedContexts, ...draft.excludedContexts].map((t) => t.contextKind).concat(draft.rules.flatMap((r) => [r.rolloutContextKind, ...r.clauses.map((c) => c.contextKind)]).filter((k): k is string => k !== undefined))),
    [draft],
  );

  const replace = (s: Segment, e: string, d: SegmentDraft = segmentDraftOf(s)) => {
    setBase({ segment: s, etag: e });
    setDraft(d);
    setRevision((r) => r + 1);
  };
  // The segment as the page reads it moves on (a refetch): follow it while nothing is edited.
  useEffect(() => {
    if (segment.version !== base.segment.version && changed.length === 0 && !server) replace(segment, etag);
  }, [segment, etag]);

  const update = (patch: Partial<SegmentDraft>) => {
    setSaved(null);
    setDraft((d) => ({ ...d, ...patch }));
  };
  const path = `/api/segments/${encodeURIComponent(segment.key)}`;
  const save = useMutation({
    mutationFn: async () => {
      const r = await request<Segment>('PATCH', path, scope, changes, { 'If-Match': base.etag });
      return { segment: r.body, etag: r.etag ?? `"${r.body.version}"` };
    },
    onSuccess: (next) => {
      qc.setQueryData(segmentQueryKey(scope, segment.key), next);
      void qc.invalidateQueries({ queryKey: segmentsQueryKey(scope) });
      replace(next.segment, next.etag);
      setSaved(`Saved: ${changed.map((f) => SEGMENT_FIELD_LABELS[f]).join(', ')}.`);
    },
    onError: async (e) => {
      if (!isApiError(e) || e.status !== 412) return;
      try {
        const r = await request<Segment>('GET', path, scope);
        setServer({ segment: r.body, etag: r.etag ?? `"${r.body.version}"` });
      } catch {
        // The 412 stays on screen as a plain error.
      }
    },
  });
  const remove = useMutation({
    mutationFn: () => request<void>('DELETE', path, scope),
    onSuccess: () => {
      qc.removeQueries({ queryKey: segmentQueryKey(scope, segment.key) });
      void qc.invalidateQueries({ queryKey: segmentsQueryKey(scope) });
      navigate('/segments');
    },
  });
  const settle = (next: { segment: Segment; etag: string }, d?: SegmentDraft) => {
    qc.setQueryData(segmentQueryKey(scope, segment.key), next);
    replace(next.segment, next.etag, d);
    setServer(null);
    save.reset();
  };

  const blocked = readOnly || changed.length === 0 || save.isPending || check.errors.length > 0 || server !== null;
  return (
    <div className="segment-editor">
      <fieldset disabled={readOnly} className="plain">
        <legend className="visually-hidden">{readOnly ? 'Segment (read only)' : 'Segment'}</legend>
        <section className="panel" aria-labelledby="segment-settings-title">
          <h2 id="segment-settings-title">Settings</h2>
          <p className="muted">
            Key <code>{segment.key}</code> in {segment.environment}, version {base.segment.version}.
          </p>
          <div className="form-grid">
            <TextField key={`n${revision}`} value={draft.name} onChange={(name) => update({ name })} isRequired isReadOnly={readOnly}>
              <Label>Name</Label>
              <Input />
            </TextField>
            <TextField key={`d${revision}`} value={draft.description} onChange={(description) => update({ description })} isReadOnly={readOnly}>
              <Label>Description</Label>
              <TextArea rows={2} />
            </TextField>
          </div>
        </section>
        <KeysSection key={`k${revision}`} draft={draft} update={update} kinds={kinds} check={check} readOnly={readOnly} />
        <section className="panel" aria-labelledby="segment-rules-title">
          <h2 id="segment-rules-title">Rules</h2>
          <p className="muted">A context not listed above is in the segment when any rule matches it (a rule with no clauses matches every context).</p>
          {draft.rules.length === 0 && <p className="muted">No rules: only the included keys are in the segment.</p>}
          <ol className="rules">
            {draft.rules.map((r, i) => (
              <SegmentRuleEditor
                key={r.id}
                rule={r}
                index={i}
                kinds={kinds}
                segments={others}
                check={check}
                revision={revision}
                readOnly={readOnly}
                onChange={(x) => update({ rules: draft.rules.map((y, k) => (k === i ? x : y)) })}
                onRemove={() => update({ rules: draft.rules.filter((_, k) => k !== i) })}
              />
            ))}
          </ol>
          {!readOnly && (
            <Button onPress={() => update({ rules: [...draft.rules, { id: crypto.randomUUID(), clauses: [newClause()] }] })} className="react-aria-Button">
              Add rule
            </Button>
          )}
        </section>
      </fieldset>
      {server && (
        <ConflictNotice
          what="segment"
          versions={[base.segment.version, server.segment.version]}
          theirs={SEGMENT_FIELDS.filter((f) => !sameJson(base.segment[f], server.segment[f])).map((f) => ({ field: f, from: base.segment[f], to: server.segment[f] }))}
          mine={changed}
          label={(f) => SEGMENT_FIELD_LABELS[f as SegmentField]}
          onReapply={() => settle(server, rebaseSegment(baseDraft, draft, server.segment).draft)}
          onDiscard={() => settle(server)}
        />
      )}
      {!readOnly && (
        <SaveBar
          unsaved={changed.map((f) => SEGMENT_FIELD_LABELS[f])}
          saved={saved}
          check={check}
          blocked={blocked}
          pending={save.isPending}
          onSave={() => save.mutate()}
          onDiscard={() => replace(base.segment, base.etag)}
        >
          <ConfirmButton label={`Delete segment ${segment.key}`} title={`Delete segment ${segment.key}?`} confirm="Delete segment" onConfirm={() => remove.mutate()} isDisabled={remove.isPending}>
            Delete segment
          </ConfirmButton>
        </SaveBar>
      )}
      {save.error && !server && (
        <>
          <ErrorState error={save.error} />
          <FieldErrors error={save.error} />
        </>
      )}
      {remove.error && <DeleteRefused error={remove.error} />}
    </div>
  );
}

/** A refused delete: a 409 segment-in-use names the flags (and segments) whose segmentMatch clauses use it. */
function DeleteRefused({ error }: { error: unknown }) {
  const names = (k: string) => (isApiError(error) && Array.isArray(error.extensions[k]) ? (error.extensions[k] as unknown[]).filter((x): x is string => typeof x === 'string') : []);
  const flags = names('flags');
  const segments = names('segments');
  if (!isApiError(error) || error.status !== 409 || flags.length + segments.length === 0) return <ErrorState error={error} />;
  return (
    <div role="alert" className="state error">
      <h2>This segment is in use</h2>
      <p>Remove the segmentMatch clauses that name it first, then delete it.</p>
      {flags.length > 0 && (
        <p>
          Flags using it: {flags.map((f, i) => (
            <span key={f}>
              {i > 0 && ', '}
              <a href={`/console/flags/${encodeURIComponent(f)}`}>{f}</a>
            </span>
          ))}
        </p>
      )}
      {segments.length > 0 && <p>Segments using it: {segments.join(', ')}</p>}
      {error.requestId && (
        <p className="request-id">
          Request id (quote it to support): <code>{error.requestId}</code>
        </p>
      )}
    </div>
  );
}

/** Included and excluded keys, one row per context kind (rows kept here, so a kind just added stays while it has no keys). */
function KeysSection({ draft, update, kinds, check, readOnly }: { draft: SegmentDraft; update: (p: Partial<SegmentDraft>) => void; kinds: readonly string[]; check: DraftCheck; readOnly: boolean }) {
  const [rows, setRows] = useState<KindKeys[]>(() => keysByKind(draft));
  const [texts, setTexts] = useState(() => rows.map((r) => ({ included: r.included.join('\n'), excluded: r.excluded.join('\n') })));
  const set = (next: KindKeys[]) => {
    setRows(next);
    update(fromKeysByKind(next));
  };
  const setKeys = (i: number, which: 'included' | 'excluded', text: string, keys: string[]) => {
    setTexts(texts.map((t, k) => (k === i ? { ...t, [which]: text } : t)));
    set(rows.map((r, k) => (k === i ? { ...r, [which]: keys } : r)));
  };
  const problems = (list: DraftCheck['errors']) => ['included', 'excluded', 'includedContexts', 'excludedContexts'].flatMap((p) => problemsAt(list, p));
  return (
    <section className="panel" aria-labelledby="segment-keys-title">
      <h2 id="segment-keys-title">Included and excluded keys</h2>
      <p className="muted">An included key is always in the segment; an excluded one never is (unless also included). Keys are per context kind.</p>
      <ol className="kind-keys">
        {rows.map((r, i) => (
          <li key={i}>
            <fieldset aria-label={`Keys of kind ${r.kind}`} className="inline-fields">
              <legend className="visually-hidden">Keys of kind {r.kind}</legend>
              {r.kind === USER_KIND && i === 0 ? (
                <p className="kind-name">
                  Kind <strong>user</strong>
                </p>
              ) : (
                <ContextKindField label="Context kind" value={r.kind} kinds={kinds.filter((k) => k !== USER_KIND)} onChange={(kind) => set(rows.map((x, k) => (k === i ? { ...x, kind } : x)))} />
              )}
              {(['included', 'excluded'] as const).map((which) => (
                <KeysField
                  key={which}
                  label={`${which === 'included' ? 'Included' : 'Excluded'} ${r.kind} keys`}
                  text={texts[i]?.[which] ?? ''}
                  onChange={(t, keys) => setKeys(i, which, t, keys)}
                  description={`One per line or comma-separated (${r[which].length}).`}
                />
              ))}
              {!readOnly && i > 0 && (
                <RemoveButton
                  label={`Remove kind ${r.kind || i + 1}`}
                  onPress={() => {
                    setTexts(texts.filter((_, k) => k !== i));
                    set(rows.filter((_, k) => k !== i));
                  }}
                />
              )}
            </fieldset>
          </li>
        ))}
      </ol>
      {!readOnly && (
        <Button
          onPress={() => {
            const kind = kinds.find((k) => k !== USER_KIND && !rows.some((r) => r.kind === k)) ?? 'organization';
            setTexts([...texts, { included: '', excluded: '' }]);
            setRows([...rows, { kind, included: [], excluded: [] }]);
          }}
          className="react-aria-Button small"
        >
          Add keys of another kind
        </Button>
      )}
      <Problems errors={problems(check.errors)} warnings={problems(check.warnings)} />
    </section>
  );
}

/** One segment rule: its clauses (the flag editor's clause editor), then optionally a percentage of matching contexts. */
function SegmentRuleEditor({
  rule,
  index,
  kinds,
  segments,
  check,
  revision,
  readOnly,
  onChange,
  onRemove,
}: {
  rule: SegmentRule;
  index: number;
  kinds: readonly string[];
  segments: readonly Segment[] | undefined;
  check: DraftCheck;
  revision: number;
  readOnly: boolean;
  onChange: (r: SegmentRule) => void;
  onRemove: () => void;
}) {
  const n = index + 1;
  const path = `rules[${index}]`;
  const weighted = rule.weight !== undefined;
  const own = (list: DraftCheck['errors']) => problemsAt(list, path).filter((p) => !p.path.startsWith(`${path}.clauses[`));
  return (
    <li className="rule">
      <fieldset aria-label={`Segment rule ${n}`}>
        <legend>Rule {n}</legend>
        {!readOnly && (
          <div className="rule-tools">
            <Button aria-label={`Remove rule ${n}`} onPress={onRemove} className="react-aria-Button small danger">
              Remove rule
            </Button>
          </div>
        )}
        <ClauseList clauses={rule.clauses} rule={n} path={path} check={check} kinds={kinds} segments={segments} revision={revision} onChange={(clauses) => onChange({ ...rule, clauses })} />
        <Checkbox
          isSelected={weighted}
          onChange={(on) => {
            const { weight: _w, bucketBy: _b, rolloutContextKind: _k, ...rest } = rule;
            onChange(on ? { ...rest, weight: SEGMENT_WEIGHT_TOTAL } : rest);
          }}
        >
          <div className="checkbox" aria-hidden="true" />
          Only a percentage of the contexts it matches
        </Checkbox>
        {weighted && (
          <div className="segment-weight">
            <NumberField value={weightToPercent(rule.weight ?? 0)} minValue={0} maxValue={100} step={0.001} formatOptions={{ maximumFractionDigits: 3 }} onChange={(p) => onChange({ ...rule, weight: percentToWeight(Number.isFinite(p) ? p : 0) })}>
              <Label>Rule {n} includes (%)</Label>
              <Input className="react-aria-Input percent" />
            </NumberField>
            <ContextKindField
              label="Bucket by context kind"
              value={rule.rolloutContextKind ?? USER_KIND}
              kinds={kinds}
              onChange={(k) => {
                const { rolloutContextKind: _k, ...rest } = rule;
                onChange(k === USER_KIND ? rest : { ...rest, rolloutContextKind: k });
              }}
            />
            <TextField value={rule.bucketBy ?? ''} onChange={(b) => onChange({ ...rule, bucketBy: b === '' ? undefined : b })}>
              <Label>Bucket by attribute</Label>
              <Input placeholder="key" />
            </TextField>
          </div>
        )}
        <Problems errors={own(check.errors)} warnings={own(check.warnings)} />
      </fieldset>
    </li>
  );
}
