import { problemOf } from '../testing/problem-of';
import { ALICE, TENANT } from '../flags/flag-services.fixture';
import { MAX_PENDING_SCHEDULES } from './flag-change-rules';
import { BOB, flagChangeServices } from './flag-changes.fixture';

const NINE = new Date('2026-03-02T09:00:00Z');

describe('ScheduledChangesService', () => {
  let s: ReturnType<typeof flagChangeServices>;
  beforeEach(async () => {
    s = flagChangeServices();
    await s.service.create(TENANT, 'production', ALICE, { key: 'checkout', name: 'Checkout', type: 'boolean', defaultValue: false });
  });
  const schedule = (patch: object, executeAt = NINE, env = 'production') => s.schedules.create(TENANT, env, ALICE, 'checkout', { patch, executeAt });
  const flag = () => s.service.get(TENANT, 'production', 'checkout');

  it('runs nothing before it is due, then applies it once, as its author, audited and announced', async () => {
    const created = await schedule({ enabled: true });
    expect(created).toMatchObject({ state: 'scheduled', author: 'user:alice', base: { enabled: false }, executeAt: NINE });
    expect(await s.schedules.executeNext()).toBeNull();
    s.clock.now = NINE;
    expect(await s.schedules.executeNext()).toEqual({ id: created.id, state: 'applied' });
    expect(await s.schedules.executeNext()).toBeNull();
    expect((await flag()).env.enabled).toBe(true);
    expect(s.repo.auditRows.filter((a) => a.action !== 'create').map((a) => [a.action, a.actor, a.changes])).toEqual([
      ['schedule', 'user:alice', { id: created.id, state: 'scheduled', executeAt: NINE.toISOString() }],
      ['update', 'user:alice', { enabled: { from: false, to: true } }],
      ['schedule', 'user:alice', { id: created.id, state: 'applied' }],
    ]);
    expect(s.announced.at(-1)).toMatchObject({ environments: ['production'], flagKey: 'checkout' });
    expect((await s.schedules.list(TENANT, 'production', 'checkout'))[0]).toMatchObject({ state: 'applied', finishedAt: NINE });
  });

  it('fails a change whose fields someone else changed meanwhile, naming them, and writes nothing', async () => {
    const created = await schedule({ enabled: true, offValue: true });
    await s.service.update(TENANT, 'production', BOB, 'checkout', { enabled: true });
    await s.service.update(TENANT, 'production', BOB, 'checkout', { enabled: false });
    await s.service.update(TENANT, 'production', BOB, 'checkout', { offValue: false });
    s.clock.now = NINE;
    expect(await s.schedules.executeNext()).toEqual({ id: created.id, state: 'failed', reason: 'conflict: changed since it was scheduled: offValue' });
    expect((await flag()).env).toMatchObject({ enabled: false, offValue: false });
    expect(s.repo.auditRows.at(-1)).toMatchObject({ action: 'schedule', actor: 'user:alice', changes: { id: created.id, state: 'failed' } });
  });

  it('is not in conflict with a change to other fields or another environment: a release still goes out', async () => {
    await schedule({ enabled: true });
    await s.service.update(TENANT, 'production', BOB, 'checkout', { name: 'Renamed', rules: [] });
    await s.service.update(TENANT, 'staging', BOB, 'checkout', { enabled: true });
    s.clock.now = NINE;
    expect(await s.schedules.executeNext()).toMatchObject({ state: 'applied' });
  });

  it('fails with the rules’ refusal when the patch is no longer valid, or the flag is gone (recorded after the write rolled back)', async () => {
    await s.service.create(TENANT, 'production', ALICE, { key: 'parent', name: 'p', type: 'boolean', defaultValue: false });
    const parent = await s.service.get(TENANT, 'production', 'parent');
    const bad = await schedule({ prerequisites: [{ key: 'parent', variationId: parent.flag.variations[0]!.id }] });
    await s.service.remove(TENANT, ALICE, 'parent');
    s.clock.now = NINE;
    const failed = await s.schedules.executeNext();
    expect(failed).toMatchObject({ id: bad.id, state: 'failed', reason: expect.stringMatching(/prerequisites/) });
    expect((await flag()).env.prerequisites).toEqual([]);
    const gone = await schedule({ enabled: true }, new Date('2026-03-02T10:00:00Z'));
    await s.service.remove(TENANT, ALICE, 'checkout');
    s.clock.now = new Date('2026-03-02T10:00:00Z');
    expect(await s.schedules.executeNext()).toEqual({ id: gone.id, state: 'failed', reason: 'No flag checkout in this tenant.' });
  });

  it('skips a change another executor holds locked, and takes it once released', async () => {
    const created = await schedule({ enabled: true });
    s.clock.now = NINE;
    s.changes.locked.add(created.id);
    expect(await s.schedules.executeNext()).toBeNull();
    s.changes.locked.delete(created.id);
    expect(await s.schedules.executeNext()).toMatchObject({ state: 'applied' });
  });

  it('cancelled changes never run; cancelling twice or another tenant’s is refused', async () => {
    const created = await schedule({ enabled: true });
    await s.schedules.cancel(TENANT, 'production', BOB, 'checkout', created.id);
    expect((await problemOf(s.schedules.cancel(TENANT, 'production', BOB, 'checkout', created.id))).extensions).toEqual({ state: 'cancelled' });
    expect((await problemOf(s.schedules.cancel(TENANT, 'staging', BOB, 'checkout', created.id))).problem.slug).toBe('scheduled-change-not-found');
    s.clock.now = NINE;
    expect(await s.schedules.executeNext()).toBeNull();
    expect((await flag()).env.enabled).toBe(false);
  });

  it('refuses a time not in the future or over a year ahead (422 naming executeAt)', async () => {
    expect((await problemOf(schedule({ enabled: true }, new Date('2026-03-01T08:00:00Z')))).extensions['errors']).toEqual({ executeAt: 'must be in the future' });
    expect((await problemOf(schedule({ enabled: true }, new Date('2027-03-03T08:00:00Z')))).extensions['errors']).toEqual({ executeAt: 'must be at most 366 days ahead' });
  });

  it(`bounds the changes scheduled per flag and environment (${MAX_PENDING_SCHEDULES})`, async () => {
    for (let i = 0; i < MAX_PENDING_SCHEDULES; i++) await schedule({ enabled: i % 2 === 0 });
    expect((await problemOf(schedule({ enabled: true }))).problem.slug).toBe('too-many-pending-changes');
    expect((await schedule({ enabled: true }, NINE, 'staging')).state).toBe('scheduled');
  });

  describe('where approval is required', () => {
    it('a direct schedule is refused (409 approval-required pointing at change requests)', async () => {
      s.approvals.set(TENANT, ['production']);
      const p = await problemOf(schedule({ enabled: true }));
      expect([p.problem.status, p.problem.slug, p.detail]).toEqual([409, 'approval-required', expect.stringMatching(/A change request with executeAt schedules the change once approved\.$/)]);
    });

    it('a schedule made before approval was required and never approved fails at execution, saying so', async () => {
      const created = await schedule({ enabled: true });
      s.approvals.set(TENANT, ['production']);
      s.clock.now = NINE;
      expect(await s.schedules.executeNext()).toMatchObject({ id: created.id, state: 'failed', reason: expect.stringMatching(/^approval-required: /) });
      expect((await flag()).env.enabled).toBe(false);
    });
  });
});
