// Approvals and scheduled changes (CONTRACT.md section 10): the queries of a flag's change requests
// and schedules, and the rules the console shows before the API would refuse (who may approve).
import { useQuery, type QueryClient } from '@tanstack/react-query';
import type { ChangeRequest, ScheduledChange } from '@flagship/sdk';
import { isApiError, request, type RequestScope } from '../../api';
import { useMembers } from '../../tenant-queries';
import { FIELD_LABELS, type EditableField } from '../targeting/draft';

export type { ChangeRequest, ScheduledChange };

const flagPath = (key: string) => `/api/flags/${encodeURIComponent(key)}`;
export const changeRequestsPath = (key: string) => `${flagPath(key)}/change-requests`;
export const scheduledChangesPath = (key: string) => `${flagPath(key)}/scheduled-changes`;

export const changeRequestsKey = (scope: RequestScope, flagKey: string) => ['change-requests', scope.tenantId, scope.environment, flagKey];
export const scheduledChangesKey = (scope: RequestScope, flagKey: string) => ['scheduled-changes', scope.tenantId, scope.environment, flagKey];

export function useChangeRequests(scope: RequestScope, flagKey: string) {
  return useQuery({
    queryKey: changeRequestsKey(scope, flagKey),
    queryFn: async () => (await request<ChangeRequest[]>('GET', changeRequestsPath(flagKey), scope)).body,
  });
}

export function useScheduledChanges(scope: RequestScope, flagKey: string) {
  return useQuery({
    queryKey: scheduledChangesKey(scope, flagKey),
    queryFn: async () => (await request<ScheduledChange[]>('GET', scheduledChangesPath(flagKey), scope)).body,
  });
}

/** After any step of a request or schedule: its lists, the flag (an apply moved it), its audit, and the inbox. */
export function refreshFlagChanges(qc: QueryClient, scope: RequestScope, flagKey: string): void {
  for (const key of [changeRequestsKey(scope, flagKey), scheduledChangesKey(scope, flagKey), ['flag', scope.tenantId, scope.environment, flagKey], ['flag-audit', scope.tenantId, flagKey], ['approval-inbox', scope.tenantId, scope.environment]]) {
    void qc.invalidateQueries({ queryKey: key });
  }
  void qc.invalidateQueries({ queryKey: ['flags', scope.tenantId, scope.environment] });
}

/** The API refused a direct change because the environment requires approval (409 approval-required). */
export const isApprovalRequired = (e: unknown): boolean => isApiError(e) && e.status === 409 && String(e.extensions['type'] ?? '').endsWith('approval-required');

/**
 * Why the signed-in member may not approve `r`, or null when they may: the API's rule (another
 * member, editor or above), said before they press the button rather than as a 403 after.
 */
export function approvalBlocked(r: Pick<ChangeRequest, 'author' | 'state'>, me: string | undefined, role: string | undefined): string | null {
  if (r.state !== 'pending') return null;
  if (me !== undefined && r.author === `user:${me}`) return 'You made this request: another member must approve it.';
  if (role === 'viewer') return 'Viewers cannot approve changes: an editor or admin must.';
  return null;
}

/** Fields that are the environment's own targeting (the editor's; `enabled` is the switch's). */
const TARGETING: readonly string[] = ['enabled', 'offValue', 'targets', 'rules', 'prerequisites'];
/** Fields served in every environment: approval anywhere covers them. Names, descriptions and tags are bookkeeping. */
const SERVED_EVERYWHERE: readonly string[] = ['variations', 'defaultValue', 'clientSideAvailability'];

/**
 * Why these changed fields, saved in `environment`, go through a change request, or null: the API's
 * rule (CONTRACT.md section 10), known before saving so the editor offers the request at once. A 409
 * approval-required still switches the editor over, should the two ever disagree.
 */
export function approvalReason(fields: readonly string[], environment: string, approvalEnvironments: readonly string[]): string | null {
  const labels = (of: readonly string[]) => fields.filter((f) => of.includes(f)).map((f) => FIELD_LABELS[f as EditableField] ?? f);
  if (approvalEnvironments.includes(environment) && labels(TARGETING).length > 0) return `Changes in ${environment} need approval`;
  const served = labels(SERVED_EVERYWHERE);
  if (approvalEnvironments.length > 0 && served.length > 0) return `${served.join(', ')} apply in every environment, and ${approvalEnvironments.join(', ')} requires approval`;
  return null;
}

/** The API's fields a patch sets, as the editor names them. */
export const patchFieldLabels = (patch: object): string[] => Object.keys(patch).map((f) => FIELD_LABELS[f as EditableField] ?? f);

/** `user:{id}` as the member's e-mail when the members list is readable, else as it is. */
export function useAuthorNames(scope: RequestScope): (author: string) => string {
  const members = useMembers(scope).data;
  return (author) => {
    const m = author.startsWith('user:') ? members?.find((x) => x.userId === author.slice(5)) : undefined;
    return m ? m.email : author;
  };
}

/** A `datetime-local` value (the user's time zone) as an ISO timestamp, or null when empty or not a time. */
export function isoOfLocal(value: string): string | null {
  if (value === '') return null;
  const t = new Date(value);
  return Number.isNaN(t.getTime()) ? null : t.toISOString();
}

export const formatTime = (iso: string): string => new Date(iso).toLocaleString();
