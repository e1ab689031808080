import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useEffect, useMemo, useState } from 'react';
import { Button } from 'react-aria-components';
import { etagOfFlag, isApiError, request, type Flag, type RequestScope, type Rule } from '../../api';
import { useFlags, useSegments } from '../../queries';
import { kindsToOffer } from './ContextKindField';
import { Empty, ErrorState } from '../States';
import { checkDraft } from './checks';
import { ConflictPanel } from './ConflictPanel';
import { changedFields, draftOf, FIELD_LABELS, flagChanges, rebase, type EditableField, type FlagDraft } from './draft';
import { newClause } from './ClauseEditor';
import { RuleEditor } from './RuleEditor';
import { SaveBar } from './SaveBar';
import { ChangeRequestFields, ScheduleFields } from '../governance/DraftRouting';
import { approvalReason, changeRequestsPath, isApprovalRequired, isoOfLocal, refreshFlagChanges, scheduledChangesPath } from '../governance/governance';
import { FallthroughSection, OffValueSection, PrerequisitesSection, SettingsSection, TargetsSection, VariationsSection } from './Sections';

/** Every context kind the draft names (clauses, targets, rollouts), to offer again. */
function kindsIn(d: FlagDraft): string[] {
  return [...d.targets.map((t) => t.contextKind), ...d.rules.flatMap((r) => [...r.clauses.map((c) => c.contextKind), r.rollout?.contextKind])].filter((k): k is string => k !== undefined);
}

export const auditQueryKey = (scope: RequestScope, key: string) => ['flag-audit', scope.tenantId, key];

/**
 * The flag's settings, variations and targeting in one environment as a draft, saved in one PATCH
 * of the changed fields with `If-Match: <the version the draft started from>`. A 412 shows what
 * changed on the server and lets the user reapply their edits on the new version. Edits that need
 * approval (`approvalEnvironments`: the keys that require it) go out as a change request instead;
 * others can also be scheduled for later.
 */
export function FlagEditor({ flag, scope, approvalEnvironments = [] }: { flag: Flag; scope: RequestScope; approvalEnvironments?: readonly string[] }) {
  const qc = useQueryClient();
  const environment = flag.environment;
  const others = useFlags({ ...scope, environment }).data;
  const [base, setBase] = useState(flag);
  const [draft, setDraft] = useState<FlagDraft>(() => draftOf(flag));
  // Read once a clause is by segment: the segmentMatch values are chosen from them.
  const bySegment = draft.rules.some((r) => r.clauses.some((c) => c.op === 'segmentMatch'));
  const segments = useSegments({ ...scope, environment }, bySegment).data;
  const [revision, setRevision] = useState(0);
  const [invalid, setInvalid] = useState<Record<string, string>>({});
  const [server, setServer] = useState<Flag | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const baseDraft = useMemo(() => draftOf(base), [base]);
  const changes = useMemo(() => changedFields(baseDraft, draft), [baseDraft, draft]);
  const changed = Object.keys(changes) as EditableField[];
  const check = useMemo(() => checkDraft(flag, draft, others), [flag, draft, others]);
  const invalidFields = Object.keys(invalid);
  const kinds = useMemo(() => kindsToOffer(kindsIn(draft)), [draft]);
  // Approval turned on after this page read the environments: the 409 switches the editor over.
  const [refused, setRefused] = useState(false);
  const reason = approvalReason(changed, environment, approvalEnvironments) ?? (refused ? `Changes in ${environment} need approval` : null);
  const viaRequest = reason !== null;
  const [comment, setComment] = useState('');
  const [applyAt, setApplyAt] = useState('');
  const [scheduleAt, setScheduleAt] = useState('');

  const replace = (f: Flag, d: FlagDraft = draftOf(f)) => {
    setBase(f);
    setDraft(d);
    setRevision((r) => r + 1);
    setInvalid({});
  };

  // The flag as the page reads it moves on (the switch above, a refetch): follow it while nothing is
  // edited, or when only the on/off state moved (this form does not edit it).
  useEffect(() => {
    if (flag.version === base.version || server) return;
    if (changed.length === 0) replace(flag);
    else if (flagChanges(base, flag).every((c) => c.field === 'enabled')) setBase(flag);
  }, [flag]);

  const update = (patch: Partial<FlagDraft>) => {
    setSaved(null);
    setDraft((d) => ({ ...d, ...patch }));
  };
  const markInvalid = (field: string, message: string | null) =>
    setInvalid((m) => {
      const { [field]: _drop, ...rest } = m;
      return message === null ? rest : { ...rest, [field]: message };
    });
  const setRules = (rules: Rule[]) => update({ rules });

  const save = useMutation({
    mutationFn: async () =>
      (await request<Flag>('PATCH', `/api/flags/${encodeURIComponent(flag.key)}`, { ...scope, environment }, changes, { 'If-Match': etagOfFlag(base) })).body,
    onSuccess: (updated) => {
      qc.setQueryData(['flag', scope.tenantId, environment, flag.key], updated);
      qc.setQueryData<Flag[]>(['flags', scope.tenantId, environment], (list) => list?.map((f) => (f.key === updated.key ? updated : f)));
      void qc.invalidateQueries({ queryKey: auditQueryKey(scope, flag.key) });
      replace(updated);
      setSaved(`Saved: ${changed.map((f) => FIELD_LABELS[f]).join(', ')}.`);
    },
    onError: async (e) => {
      if (isApprovalRequired(e)) {
        setRefused(true);
        save.reset();
        return;
      }
      if (!isApiError(e) || e.status !== 412) return;
      // What the server holds now, to show the difference and rebase on it.
      try {
        setServer((await request<Flag>('GET', `/api/flags/${encodeURIComponent(flag.key)}`, { ...scope, environment })).body);
      } catch {
        // The 412 stays on screen as a plain error.
      }
    },
  });

  // The edits now live in the request or the schedule: the draft starts again from the flag.
  const handedOver = (message: string) => {
    refreshFlagChanges(qc, { ...scope, environment }, flag.key);
    setSaved(message);
    setBase(flag);
    setDraft(draftOf(flag));
    setRevision((r) => r + 1);
    setInvalid({});
  };
  const propose = useMutation({
    mutationFn: async () => {
      const executeAt = isoOfLocal(applyAt);
      const body = { patch: changes, ...(comment.trim() ? { comment: comment.trim() } : {}), ...(executeAt ? { executeAt } : {}) };
      return (await request('POST', changeRequestsPath(flag.key), { ...scope, environment }, body)).body;
    },
    onSuccess: () => {
      setComment('');
      setApplyAt('');
      handedOver(`Change request sent for approval: ${changed.map((f) => FIELD_LABELS[f]).join(', ')}.`);
    },
  });
  const schedule = useMutation({
    mutationFn: async () => (await request('POST', scheduledChangesPath(flag.key), { ...scope, environment }, { patch: changes, executeAt: isoOfLocal(scheduleAt) })).body,
    onSuccess: () => {
      setScheduleAt('');
      handedOver(`Scheduled for ${new Date(scheduleAt).toLocaleString()}: ${changed.map((f) => FIELD_LABELS[f]).join(', ')}.`);
    },
  });

  const settle = (next: Flag, d?: FlagDraft) => {
    qc.setQueryData(['flag', scope.tenantId, environment, flag.key], next);
    void qc.invalidateQueries({ queryKey: auditQueryKey(scope, flag.key) });
    replace(next, d);
    setServer(null);
    save.reset();
  };

  const busy = save.isPending || propose.isPending || schedule.isPending;
  const blocked = changed.length === 0 || busy || invalidFields.length > 0 || check.errors.length > 0 || server !== null;
  return (
    <div className="flag-editor">
      <SettingsSection key={`s${revision}`} flag={flag} draft={draft} update={update} invalid={markInvalid} />
      <VariationsSection key={`v${revision}`} flag={flag} draft={draft} update={update} invalid={markInvalid} check={check} />
      <section className="panel" aria-labelledby="targeting-title">
        <h2 id="targeting-title">Targeting in {environment}</h2>
        <TargetsSection key={`t${revision}-${draft.variations.length}`} draft={draft} update={update} check={check} kinds={kinds} />
        <div className="subsection">
          <h3>Rules</h3>
          {draft.rules.length === 0 ? (
            <Empty>
              <p>No rules: every context not targeted gets the fallthrough.</p>
            </Empty>
          ) : (
            <ol className="rules">
              {draft.rules.map((r, i) => (
                <RuleEditor
                  key={r.id}
                  rule={r}
                  index={i}
                  count={draft.rules.length}
                  variations={draft.variations}
                  check={check}
                  revision={revision}
                  kinds={kinds}
                  segments={segments}
                  onChange={(x) => setRules(draft.rules.map((y, k) => (k === i ? x : y)))}
                  onMove={(d) => {
                    const next = [...draft.rules];
                    const [moved] = next.splice(i, 1);
                    next.splice(i + d, 0, moved!);
                    setRules(next);
                  }}
                  onRemove={() => setRules(draft.rules.filter((_, k) => k !== i))}
                />
              ))}
            </ol>
          )}
          <Button
            onPress={() => setRules([...draft.rules, { id: crypto.randomUUID(), description: '', clauses: [newClause()], variationId: draft.variations[0]?.id }])}
            className="react-aria-Button"
          >
            Add rule
          </Button>
        </div>
        <FallthroughSection key={`f${revision}`} draft={draft} update={update} environment={environment} />
        <OffValueSection flag={flag} draft={draft} update={update} />
        <PrerequisitesSection flag={flag} draft={draft} update={update} others={others} check={check} />
      </section>
      {server && (
        <ConflictPanel
          base={base}
          server={server}
          baseDraft={baseDraft}
          draft={draft}
          onReapply={() => settle(server, rebase(baseDraft, draft, server).draft)}
          onDiscard={() => settle(server)}
        />
      )}
      {reason !== null && changed.length > 0 && <ChangeRequestFields reason={reason} comment={comment} onComment={setComment} applyAt={applyAt} onApplyAt={setApplyAt} />}
      <SaveBar
        unsaved={changed.map((f) => FIELD_LABELS[f])}
        saved={saved}
        check={check}
        notes={[invalidFields.length > 0 && "A value does not fit the flag's type.", check.warnings.length > 0 && `${check.warnings.length} warning${check.warnings.length > 1 ? 's' : ''}: values that never match.`]}
        blocked={blocked}
        pending={busy}
        saveLabel={viaRequest ? 'Request approval' : 'Save changes'}
        onSave={() => (viaRequest ? propose.mutate() : save.mutate())}
        onDiscard={() => replace(base)}
      >
        {!viaRequest && <ScheduleFields at={scheduleAt} onAt={setScheduleAt} blocked={blocked} pending={schedule.isPending} onSchedule={() => schedule.mutate()} />}
      </SaveBar>
      {propose.error ? <ErrorState error={propose.error} /> : null}
      {schedule.error ? <ErrorState error={schedule.error} /> : null}
      {save.error && !server && (
        <ErrorState error={save.error} hint={isApiError(save.error) && Object.keys(save.error.fieldErrors).length ? Object.entries(save.error.fieldErrors).map(([k, v]) => `${k}: ${v}`).join('; ') : undefined} />
      )}
    </div>
  );
}
