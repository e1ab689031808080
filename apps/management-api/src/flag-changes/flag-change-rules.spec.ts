import type { FlagRow } from '../flags/flags.repository';
import { approvalNeeded, approvalRefusal, baseOf, deleteNeedsApproval, executeAtProblem, scheduleConflicts, transition } from './flag-change-rules';
import { CHANGE_REQUEST_STATES } from './flag-changes.repository';

const row = (env: Partial<FlagRow['env']> = {}, flag: Partial<FlagRow['flag']> = {}): FlagRow =>
  ({
    flag: { name: 'f', description: '', tags: [], defaultValue: false, variations: [], projectId: null, clientSideAvailability: { usingEnvironmentId: false, usingMobileKey: false }, version: 1, ...flag },
    env: { enabled: false, offValue: null, targets: [], rules: [], prerequisites: [], salt: null, version: 1, ...env },
  }) as unknown as FlagRow;

describe('flag change rules', () => {
  it('approvalNeeded: targeting where approval is required; what every environment serves while any requires it; never bookkeeping', () => {
    expect(approvalNeeded({ enabled: true }, 'production', ['production'])).toMatch(/^Environment production requires approval .*\(enabled\)/);
    expect(approvalNeeded({ enabled: true }, 'staging', ['production'])).toBeUndefined();
    expect(approvalNeeded({ variations: [] }, 'staging', ['production'])).toMatch(/^variations change what every environment serves/);
    expect(approvalNeeded({ name: 'x', description: 'y', tags: [], projectId: null }, 'production', ['production'])).toBeUndefined();
    expect(approvalNeeded({ enabled: true, defaultValue: true }, 'production', [])).toBeUndefined();
  });

  it('deleteNeedsApproval: only while the flag is on where approval is required', () => {
    expect(deleteNeedsApproval(['staging'], ['production'])).toBeUndefined();
    expect(deleteNeedsApproval(['production', 'staging'], ['production'])).toMatch(/on in production/);
  });

  it('transition: the whole table (approve pending; reject pending or approved; apply approved; stale from open ones)', () => {
    const table = Object.fromEntries(
      (['approve', 'reject', 'apply', 'stale'] as const).map((action) => [action, CHANGE_REQUEST_STATES.map((state) => { const t = transition(state, action); return typeof t === 'string' ? t : 'refused'; })]),
    );
    // states in order: pending, approved, applied, rejected, stale
    expect(table).toEqual({
      approve: ['approved', 'refused', 'refused', 'refused', 'refused'],
      reject: ['rejected', 'rejected', 'refused', 'refused', 'refused'],
      apply: ['refused', 'applied', 'refused', 'refused', 'refused'],
      stale: ['stale', 'stale', 'refused', 'refused', 'refused'],
    });
  });

  it('approvalRefusal: another user with editor or admin only', () => {
    const author = { author: 'user:a' };
    expect(approvalRefusal({ kind: 'user', callerId: 'user:b', role: 'editor' }, author)).toBeUndefined();
    expect(approvalRefusal({ kind: 'user', callerId: 'user:b', role: 'admin' }, author)).toBeUndefined();
    expect(approvalRefusal({ kind: 'user', callerId: 'user:a', role: 'admin' }, author)?.getStatus()).toBe(403);
    expect(approvalRefusal({ kind: 'user', callerId: 'user:b', role: 'viewer' }, author)?.getStatus()).toBe(403);
    expect(approvalRefusal({ kind: 'user', callerId: 'user:b' }, author)?.detail).toMatch(/not a member/);
    expect(approvalRefusal({ kind: 'client', callerId: 'client:c', scopes: ['flags:write'] }, author)?.getStatus()).toBe(403);
  });

  it('baseOf and scheduleConflicts: only the fields the patch sets, compared as JSON whatever the key order Postgres gives back', () => {
    const rules = [{ id: 'r', variationId: 'v', clauses: [{ attribute: 'country', op: 'in', values: ['NO'] }] }];
    const base = baseOf(row({ rules: rules as never }), { rules: [], offValue: true });
    expect(base).toEqual({ rules, offValue: null });
    const reordered = [{ clauses: [{ values: ['NO'], op: 'in', attribute: 'country' }], variationId: 'v', id: 'r' }];
    expect(scheduleConflicts(base, row({ rules: reordered as never, enabled: true }, { name: 'other' }))).toEqual([]);
    expect(scheduleConflicts(base, row({ rules: [] , offValue: false }))).toEqual(['offValue', 'rules']);
  });

  it('executeAtProblem: the future, within 366 days', () => {
    const now = new Date('2026-03-01T00:00:00Z');
    expect(executeAtProblem(new Date('2026-03-01T00:00:01Z'), now)).toBeUndefined();
    expect(executeAtProblem(now, now)).toBe('must be in the future');
    expect(executeAtProblem(new Date('2027-03-03T00:00:00Z'), now)).toBe('must be at most 366 days ahead');
    expect(executeAtProblem(new Date('nope'), now)).toBe('must be a date-time');
  });
});
