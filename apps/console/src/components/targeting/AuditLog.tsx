import { useQuery } from '@tanstack/react-query';
import { formatValue, request, type FlagAuditEntry, type JsonValue, type RequestScope } from '../../api';
import { Empty, ErrorState, Loading } from '../States';
import { FieldDiff } from './ConflictPanel';
import { sameJson } from './draft';
import { auditQueryKey } from './FlagEditor';

const isFromTo = (v: unknown): v is { from: unknown; to: unknown } => typeof v === 'object' && v !== null && !Array.isArray(v) && 'to' in v && Object.keys(v).every((k) => k === 'from' || k === 'to');

const ACTIONS: Record<string, string> = { create: 'Created', update: 'Updated', delete: 'Deleted', import: 'Imported' };

/**
 * The flag's audit trail, newest first, each change as a field diff. Read again whenever the flag's
 * version moves (a save, the on/off switch), so the newest change is always listed.
 */
export function AuditLog({ flagKey, version, scope }: { flagKey: string; version: string; scope: RequestScope }) {
  const q = useQuery({
    queryKey: [...auditQueryKey(scope, flagKey), version],
    placeholderData: (previous) => previous,
    queryFn: async () => (await request<FlagAuditEntry[]>('GET', `/api/flags/${encodeURIComponent(flagKey)}/audit`, scope)).body,
  });
  return (
    <section className="panel" aria-labelledby="audit-title">
      <h2 id="audit-title">Audit log</h2>
      {q.isPending && <Loading what="the audit log" />}
      {q.isError && <ErrorState error={q.error} onRetry={() => void q.refetch()} />}
      {q.isSuccess && q.data.length === 0 && (
        <Empty>
          <p>No changes recorded.</p>
        </Empty>
      )}
      {q.isSuccess && q.data.length > 0 && (
        <ol className="audit" reversed>
          {[...q.data].reverse().map((e, i) => (
            <li key={`${e.at}-${i}`}>
              <article aria-label={`${ACTIONS[e.action] ?? e.action} ${new Date(e.at).toLocaleString()}`}>
                <p>
                  <strong>{ACTIONS[e.action] ?? e.action}</strong> {e.environment ? `in ${e.environment}` : '(all environments)'} by <code>{e.actor}</code>,{' '}
                  <time dateTime={e.at}>{new Date(e.at).toLocaleString()}</time>
                </p>
                {Object.entries(e.changes)
                  // Older records list fields a PATCH did not change (null -> null).
                  .filter(([, c]) => !(isFromTo(c) && sameJson(c.from, c.to)))
                  .map(([field, c]) =>
                    isFromTo(c) ? (
                      <FieldDiff key={field} change={{ field, from: c.from, to: c.to }} />
                    ) : (
                      <p key={field} className="audit-set">
                        {field}: <code>{formatValue(c as JsonValue)}</code>
                      </p>
                    ),
                  )}
              </article>
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}
