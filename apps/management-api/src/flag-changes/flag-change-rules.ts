import { roleAtLeast } from '@flagship/domain';
import { ProblemException } from '@flagship/problem-details';
import type { CallerContext } from '@flagship/service-kit';
import { etagOf } from '../flags/flag.mapper';
import type { FlagPatch } from '../flags/flag-patch';
import type { FlagRow } from '../flags/flags.repository';
import { FlagChangeProblems } from './flag-changes.errors';
import type { ChangeRequestRow, ChangeRequestState } from './flag-changes.repository';

/**
 * The rules of approvals and schedules, as pure functions of what the services read, so each is
 * proven without I/O (flag-change-rules.spec.ts, change-requests.service.spec.ts).
 */

/** The clock the change services read (a provider only in tests that move time). */
export const FLAG_CHANGES_CLOCK = Symbol('FLAG_CHANGES_CLOCK');

/** Pending and approved requests a flag may have per environment, and schedules still to run: a free tenant cannot grow these without bound. */
export const MAX_OPEN_CHANGE_REQUESTS = 20;
export const MAX_PENDING_SCHEDULES = 50;
export const MAX_COMMENTS = 50;
/** Open requests and schedules of one tenant together: the per-flag bounds times 5,000 flags and 20 environments would not bound a tenant. */
export const MAX_OPEN_CHANGES_PER_TENANT = 1000;
/** A patch is stored until it runs: larger than any flag should be (FLAG_MAX_BYTES' default is 32 KiB), it is refused up front. */
export const MAX_PATCH_BYTES = 65_536;
/** How far ahead a change may be scheduled. */
export const MAX_SCHEDULE_AHEAD_MS = 366 * 24 * 3600_000;

const TARGETING: ReadonlyArray<keyof FlagPatch> = ['enabled', 'offValue', 'targets', 'rules', 'prerequisites', 'salt'];
/** Global fields that change what is served in every environment (names and tags do not). */
const SERVED_GLOBALS: ReadonlyArray<keyof FlagPatch> = ['variations', 'defaultValue', 'clientSideAvailability'];
const sent = (patch: FlagPatch, fields: ReadonlyArray<keyof FlagPatch>): Array<keyof FlagPatch> => fields.filter((f) => patch[f] !== undefined);

/**
 * Why this patch, sent in `environment`, needs an approved change request, or undefined. Targeting
 * is the environment's own; variations, the default and client-side availability are served in every
 * environment, so they need approval while any environment of the tenant requires it. Names,
 * descriptions, tags and projects are bookkeeping and never do.
 */
export function approvalNeeded(patch: FlagPatch, environment: string, approvalEnvironments: readonly string[]): string | undefined {
  const targeting = sent(patch, TARGETING);
  if (targeting.length > 0 && approvalEnvironments.includes(environment)) {
    return `Environment ${environment} requires approval for changes to a flag's settings (${targeting.join(', ')}); create a change request (POST /api/flags/{flagKey}/change-requests).`;
  }
  const served = sent(patch, SERVED_GLOBALS);
  if (served.length > 0 && approvalEnvironments.length > 0) {
    return `${served.join(', ')} change what every environment serves, and ${approvalEnvironments.join(', ')} requires approval; create a change request.`;
  }
  return undefined;
}

/** Why deleting a flag needs approval first: it is switched on in an environment that requires approval (switch it off there through a change request). */
export function deleteNeedsApproval(enabledIn: readonly string[], approvalEnvironments: readonly string[]): string | undefined {
  const on = enabledIn.filter((e) => approvalEnvironments.includes(e));
  return on.length > 0 ? `The flag is on in ${on.join(', ')}, which requires approval: switch it off there through a change request, then delete it.` : undefined;
}

/**
 * Why a LaunchDarkly import needs approval: it writes targeting in `environment`, and replacing a
 * flag replaces its variations in every environment. New flags elsewhere need none (off everywhere
 * but the import's environment). There is no import change request: import where approval is not
 * required, or turn it off for the import.
 */
export function importNeedsApproval(environment: string, approvalEnvironments: readonly string[], replacing: readonly string[]): string | undefined {
  if (approvalEnvironments.includes(environment)) return `Environment ${environment} requires approval for changes to flags; an import there is refused.`;
  if (replacing.length > 0 && approvalEnvironments.length > 0) {
    return `The import replaces the variations of ${replacing.join(', ')} in every environment, and ${approvalEnvironments.join(', ')} requires approval.`;
  }
  return undefined;
}

/** What each action needs the request to be in, and what it leaves it in. */
const TRANSITIONS: Record<'approve' | 'reject' | 'apply' | 'stale', { from: readonly ChangeRequestState[]; to: ChangeRequestState }> = {
  approve: { from: ['pending'], to: 'approved' },
  reject: { from: ['pending', 'approved'], to: 'rejected' },
  apply: { from: ['approved'], to: 'applied' },
  stale: { from: ['pending', 'approved'], to: 'stale' },
};
export type ChangeRequestAction = keyof typeof TRANSITIONS;

/** The state `action` leaves the request in, or the 409 refusing it. */
export function transition(state: ChangeRequestState, action: ChangeRequestAction): ChangeRequestState | ProblemException {
  const t = TRANSITIONS[action];
  if (t.from.includes(state)) return t.to;
  return new ProblemException(FlagChangeProblems['change-request-closed'], `The change request is ${state}; ${action} needs it ${t.from.join(' or ')}.`, { state });
}

/** Why `caller` may not approve `request`, or undefined: approval is a second person's, an editor or above, never the author. */
export function approvalRefusal(caller: CallerContext, request: Pick<ChangeRequestRow, 'author'>): ProblemException | undefined {
  const refuse = (detail: string) => new ProblemException(FlagChangeProblems['approval-not-allowed'], detail);
  if (caller.kind !== 'user') return refuse('A change request is approved by a member of the tenant, not by an OAuth client.');
  if (caller.callerId === request.author) return refuse('The author of a change request cannot approve it: another member must.');
  if (!caller.role || !roleAtLeast(caller.role, 'editor')) return refuse(`Approving needs the editor role or above; this member is ${caller.role ?? 'not a member'}.`);
  return undefined;
}

/** The 409 when the flag moved on from the version the request was made against (the same check as PATCH's If-Match). */
export function staleRequest(request: Pick<ChangeRequestRow, 'baseVersion'>, row: FlagRow): ProblemException | undefined {
  const current = etagOf(row);
  if (current === request.baseVersion) return undefined;
  return new ProblemException(
    FlagChangeProblems['change-request-stale'],
    `The change request was made against version ${request.baseVersion} and the flag is at ${current}; make a new request against the flag as it is.`,
    { baseVersion: request.baseVersion, currentVersion: current },
  );
}

/** What the fields a patch sets hold now: a schedule's base, against which a conflict is told at execution. */
export function baseOf(row: FlagRow, patch: FlagPatch): Record<string, unknown> {
  const now: Record<string, unknown> = { ...row.flag, ...row.env };
  const base: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(patch)) if (value !== undefined) base[field] = now[field] ?? null;
  return base;
}

/**
 * The fields a scheduled patch sets that someone else changed since it was scheduled: executing
 * would silently overwrite their change, so the schedule fails naming them. Changes to other fields
 * (another environment, a rename) do not conflict: a 09:00 release still goes out.
 */
export function scheduleConflicts(base: Record<string, unknown>, row: FlagRow): string[] {
  const now: Record<string, unknown> = { ...row.flag, ...row.env };
  return Object.keys(base)
    .filter((field) => canonical(now[field] ?? null) !== canonical(base[field]))
    .sort();
}

/** The 409 when the tenant holds as many open requests and schedules as it may. */
export function tenantFull(open: number): ProblemException | undefined {
  if (open < MAX_OPEN_CHANGES_PER_TENANT) return undefined;
  return new ProblemException(FlagChangeProblems['too-many-pending-changes'], `This tenant has ${open} open change requests and scheduled changes, as many as it may; apply, reject or cancel some first.`, {
    limit: MAX_OPEN_CHANGES_PER_TENANT,
  });
}

/** The patch's problem (a 422's message), or undefined: at most MAX_PATCH_BYTES of JSON. */
export function patchProblem(patch: FlagPatch): string | undefined {
  const bytes = Buffer.byteLength(JSON.stringify(patch));
  return bytes > MAX_PATCH_BYTES ? `takes ${bytes} bytes; a stored change may take at most ${MAX_PATCH_BYTES}` : undefined;
}

/** executeAt's problem (a 422's message), or undefined: in the future, at most MAX_SCHEDULE_AHEAD_MS ahead. */
export function executeAtProblem(executeAt: Date, now: Date): string | undefined {
  if (Number.isNaN(executeAt.getTime())) return 'must be a date-time';
  if (executeAt.getTime() <= now.getTime()) return 'must be in the future';
  if (executeAt.getTime() - now.getTime() > MAX_SCHEDULE_AHEAD_MS) return 'must be at most 366 days ahead';
  return undefined;
}

/** JSON with object keys sorted: Postgres' jsonb gives keys back in its own order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value)
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}
