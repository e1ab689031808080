import { useQuery } from '@tanstack/react-query';
import { Link } from 'wouter';
import { request, type Flag, type RequestScope } from '../api';
import { ChangeRequestItem } from '../components/governance/ChangeRequests';
import { approvalBlocked, type ChangeRequest, changeRequestsPath } from '../components/governance/governance';
import { Empty, ErrorState, Loading } from '../components/States';
import { useFlags } from '../queries';
import { useSignedIn } from '../session';

/**
 * How many flags the inbox reads the change requests of, and how many reads run at once. The API
 * lists change requests per flag only, so the inbox asks flag by flag: bounded, so a tenant of 1,000
 * flags costs 100 small reads, not 1,000, and the page says when it did not look at every flag.
 */
export const INBOX_MAX_FLAGS = 100;
const PARALLEL_READS = 4;

export interface InboxEntry { flag: Flag; request: ChangeRequest }

/** The pending change requests of up to `INBOX_MAX_FLAGS` flags (most recently updated first), oldest request first. */
export async function readInbox(scope: RequestScope, flags: Flag[]): Promise<InboxEntry[]> {
  const queue = [...flags].sort((a, b) => b.updatedAt.localeCompare(a.updatedAt)).slice(0, INBOX_MAX_FLAGS);
  const out: InboxEntry[] = [];
  const worker = async () => {
    for (let f = queue.shift(); f; f = queue.shift()) {
      const flag = f;
      const list = (await request<ChangeRequest[]>('GET', changeRequestsPath(flag.key), scope)).body;
      out.push(...list.filter((r) => r.state === 'pending').map((r) => ({ flag, request: r })));
    }
  };
  await Promise.all(Array.from({ length: PARALLEL_READS }, worker));
  return out.sort((a, b) => a.request.createdAt.localeCompare(b.request.createdAt));
}

/** The approval inbox: pending change requests in the environment that the signed-in member may approve. */
export function Approvals() {
  const { scope, environment, userId, tenants, tenantId } = useSignedIn();
  const role = tenants.find((t) => t.tenant_id === tenantId)?.role;
  const flags = useFlags(scope);
  const inbox = useQuery({
    queryKey: ['approval-inbox', scope.tenantId, scope.environment],
    enabled: flags.isSuccess,
    queryFn: () => readInbox(scope, flags.data ?? []),
  });
  const mayApprove = inbox.data?.filter((e) => approvalBlocked(e.request, userId, role) === null) ?? [];
  const others = (inbox.data?.length ?? 0) - mayApprove.length;
  const total = flags.data?.length ?? 0;
  return (
    <section aria-labelledby="approvals-title">
      <h1 id="approvals-title">Approvals in {environment}</h1>
      <p className="muted">Change requests waiting for a member other than their author to approve them.</p>
      {(flags.isPending || inbox.isPending) && !flags.isError && <Loading what="change requests" />}
      {flags.isError && <ErrorState error={flags.error} onRetry={() => void flags.refetch()} />}
      {inbox.isError && <ErrorState error={inbox.error} onRetry={() => void inbox.refetch()} />}
      {total > INBOX_MAX_FLAGS && inbox.isSuccess && (
        <p role="note" className="notice">
          Checked the {INBOX_MAX_FLAGS} most recently updated of {total} flags: a request on another flag is on that flag’s page.
        </p>
      )}
      {inbox.isSuccess && mayApprove.length === 0 && (
        <Empty>
          <p>Nothing waits for your approval in {environment}.</p>
        </Empty>
      )}
      {others > 0 && (
        <p className="muted">
          {others} pending request{others > 1 ? 's' : ''} you cannot approve ({role === 'viewer' ? 'viewers cannot approve' : 'your own'}).
        </p>
      )}
      {mayApprove.length > 0 && (
        <ol className="change-requests">
          {mayApprove.map((e) => (
            <li key={e.request.id}>
              <h2>
                <Link href={`/flags/${encodeURIComponent(e.flag.key)}`}>{e.flag.name}</Link> <code className="muted">{e.flag.key}</code>
              </h2>
              <ChangeRequestItem flag={e.flag} request={e.request} scope={scope} />
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}
