import { problemOf } from '../testing/problem-of';
import { ALICE, OTHER_TENANT, TENANT } from '../flags/flag-services.fixture';
import { etagOf } from '../flags/flag.mapper';
import { FAKE_TX } from '../testing/inline-transactions';
import { MAX_COMMENTS, MAX_OPEN_CHANGE_REQUESTS, MAX_OPEN_CHANGES_PER_TENANT, MAX_PATCH_BYTES } from './flag-change-rules';
import { FlagChangesRepository } from './flag-changes.repository';
import { BOB, CAROL_VIEWER, CI_CLIENT, flagChangeServices } from './flag-changes.fixture';

describe('approvals: ChangeRequestsService and FlagsService in an environment that requires approval', () => {
  let s: ReturnType<typeof flagChangeServices>;
  beforeEach(async () => {
    s = flagChangeServices();
    await s.service.create(TENANT, 'production', ALICE, { key: 'checkout', name: 'Checkout', type: 'boolean', defaultValue: false });
    s.approvals.set(TENANT, ['production']);
  });
  const request = (patch: object, comment?: string, env = 'production') => s.requests.create(TENANT, env, ALICE, 'checkout', { patch, comment });

  it('the fake is a repository', () => {
    expect(s.changes).toBeInstanceOf(FlagChangesRepository);
  });

  describe('direct changes', () => {
    it('refuses a targeting PATCH there (409 approval-required saying what to do) and writes nothing', async () => {
      const p = await problemOf(s.service.update(TENANT, 'production', ALICE, 'checkout', { enabled: true }));
      expect([p.problem.status, p.problem.slug]).toEqual([409, 'approval-required']);
      expect(p.detail).toMatch(/change request/);
      expect((await s.service.get(TENANT, 'production', 'checkout')).env.enabled).toBe(false);
    });

    it('lets targeting elsewhere and bookkeeping fields through; what every environment serves needs approval while any environment requires it', async () => {
      expect((await s.service.update(TENANT, 'staging', ALICE, 'checkout', { enabled: true })).env.enabled).toBe(true);
      expect((await s.service.update(TENANT, 'production', ALICE, 'checkout', { name: 'New name', tags: ['web'] })).flag.name).toBe('New name');
      const p = await problemOf(s.service.update(TENANT, 'staging', ALICE, 'checkout', { defaultValue: true }));
      expect([p.problem.slug, p.detail]).toEqual(['approval-required', expect.stringMatching(/^defaultValue change what every environment serves, and production requires approval/)]);
    });

    it('refuses deleting a flag switched on where approval is required, and deletes it once it is off there', async () => {
      const created = await request({ enabled: true });
      await s.requests.approve(TENANT, 'production', BOB, 'checkout', created.id);
      await s.requests.apply(TENANT, 'production', BOB, 'checkout', created.id);
      expect((await problemOf(s.service.remove(TENANT, ALICE, 'checkout'))).problem.slug).toBe('approval-required');
      const off = await request({ enabled: false });
      await s.requests.approve(TENANT, 'production', BOB, 'checkout', off.id);
      await s.requests.apply(TENANT, 'production', BOB, 'checkout', off.id);
      await s.service.remove(TENANT, ALICE, 'checkout');
      expect(await s.repo.findByKey(TENANT, 'checkout')).toBeNull();
    });
  });

  describe('the request', () => {
    it('is pending against the flag’s version, with its comment, audited as its author', async () => {
      const row = await s.service.get(TENANT, 'production', 'checkout');
      const created = await request({ enabled: true }, 'release the new checkout');
      expect(created).toMatchObject({ state: 'pending', author: 'user:alice', baseVersion: etagOf(row), patch: { enabled: true }, comments: [{ author: 'user:alice', body: 'release the new checkout' }] });
      expect(s.repo.auditRows.at(-1)).toMatchObject({ action: 'change-request', actor: 'user:alice', environmentKey: 'production', changes: { id: created.id, state: 'pending' } });
      expect((await s.requests.list(TENANT, 'production', 'checkout')).map((r) => r.id)).toEqual([created.id]);
    });

    it('is another tenant’s 404, and a flag that is not there is 404', async () => {
      const created = await request({ enabled: true });
      expect((await problemOf(s.requests.get(OTHER_TENANT, 'production', 'checkout', created.id))).problem.slug).toBe('change-request-not-found');
      expect((await problemOf(s.requests.approve(OTHER_TENANT, 'production', BOB, 'checkout', created.id))).problem.slug).toBe('change-request-not-found');
      expect((await problemOf(s.requests.create(TENANT, 'production', ALICE, 'nope', { patch: { enabled: true } }))).problem.slug).toBe('flag-not-found');
    });

    it(`bounds open requests per flag and environment (${MAX_OPEN_CHANGE_REQUESTS}), and comments per request (${MAX_COMMENTS})`, async () => {
      for (let i = 0; i < MAX_OPEN_CHANGE_REQUESTS; i++) await request({ enabled: true });
      const p = await problemOf(request({ enabled: true }));
      expect([p.problem.status, p.problem.slug, p.extensions]).toEqual([409, 'too-many-pending-changes', { limit: MAX_OPEN_CHANGE_REQUESTS }]);
      const [first] = await s.requests.list(TENANT, 'production', 'checkout');
      await s.requests.reject(TENANT, 'production', ALICE, 'checkout', first!.id);
      const again = await request({ enabled: true });
      for (let i = 0; i < MAX_COMMENTS; i++) await s.requests.comment(TENANT, 'production', BOB, 'checkout', again.id, `c${i}`);
      expect((await problemOf(s.requests.comment(TENANT, 'production', BOB, 'checkout', again.id, 'one more'))).problem.slug).toBe('too-many-comments');
      expect((await problemOf(s.requests.reject(TENANT, 'production', BOB, 'checkout', again.id, 'one more'))).problem.slug).toBe('too-many-comments');
      expect((await s.requests.get(TENANT, 'production', 'checkout', again.id)).state).toBe('pending');
    });

    it(`bounds a tenant's open requests and schedules together (${MAX_OPEN_CHANGES_PER_TENANT}), and a patch's size (${MAX_PATCH_BYTES} bytes, 422 naming patch)`, async () => {
      for (let i = 0; i < MAX_OPEN_CHANGES_PER_TENANT - 1; i++) {
        await s.changes.insertRequest(FAKE_TX, TENANT, { environment: 'staging', flagKey: `other-${i}`, patch: {}, baseVersion: '"1.1"', executeAt: null, author: 'user:x', comments: [] });
      }
      await s.schedules.create(TENANT, 'staging', ALICE, 'checkout', { patch: { enabled: true }, executeAt: new Date('2026-03-02T09:00:00Z') });
      const p = await problemOf(request({ enabled: true }));
      expect([p.problem.status, p.problem.slug, p.extensions]).toEqual([409, 'too-many-pending-changes', { limit: MAX_OPEN_CHANGES_PER_TENANT }]);
      expect((await problemOf(s.schedules.create(TENANT, 'staging', ALICE, 'checkout', { patch: { enabled: false }, executeAt: new Date('2026-03-02T10:00:00Z') }))).problem.slug).toBe('too-many-pending-changes');
      await s.service.create(OTHER_TENANT, 'production', ALICE, { key: 'checkout', name: 'Checkout', type: 'boolean', defaultValue: false });
      expect((await s.requests.create(OTHER_TENANT, 'production', ALICE, 'checkout', { patch: { enabled: true } })).state).toBe('pending');
      const big = await problemOf(s.requests.create(TENANT, 'staging', ALICE, 'checkout', { patch: { description: 'x'.repeat(MAX_PATCH_BYTES) } }));
      expect([big.problem.status, Object.keys(big.extensions['errors'] as object)]).toEqual([422, ['patch']]);
    });
  });

  describe('who may approve', () => {
    it('never its author (403 saying so), nor a viewer, nor an OAuth client; another editor may', async () => {
      const created = await request({ enabled: true });
      const own = await problemOf(s.requests.approve(TENANT, 'production', { ...ALICE, role: 'admin' }, 'checkout', created.id));
      expect([own.problem.status, own.problem.slug, own.detail]).toEqual([403, 'approval-not-allowed', 'The author of a change request cannot approve it: another member must.']);
      expect((await problemOf(s.requests.approve(TENANT, 'production', CAROL_VIEWER, 'checkout', created.id))).detail).toMatch(/editor role or above; this member is viewer/);
      expect((await problemOf(s.requests.approve(TENANT, 'production', CI_CLIENT, 'checkout', created.id))).detail).toMatch(/not by an OAuth client/);
      expect((await s.requests.get(TENANT, 'production', 'checkout', created.id)).state).toBe('pending');
      const approved = await s.requests.approve(TENANT, 'production', BOB, 'checkout', created.id, 'looks right');
      expect(approved).toMatchObject({ state: 'approved', decidedBy: 'user:bob', comments: [{ author: 'user:bob', body: 'looks right' }] });
    });
  });

  describe('the state machine', () => {
    it('pending -> approved -> applied: written as its author, with the same announcement as PATCH; applied once', async () => {
      const created = await request({ enabled: true });
      const early = await problemOf(s.requests.apply(TENANT, 'production', BOB, 'checkout', created.id));
      expect([early.problem.status, early.problem.slug, early.extensions]).toEqual([409, 'change-request-closed', { state: 'pending' }]);
      await s.requests.approve(TENANT, 'production', BOB, 'checkout', created.id);
      const applied = await s.requests.apply(TENANT, 'production', CI_CLIENT, 'checkout', created.id);
      expect(applied).toMatchObject({ state: 'applied', appliedBy: 'client:ci', decidedBy: 'user:bob' });
      expect((await s.service.get(TENANT, 'production', 'checkout')).env.enabled).toBe(true);
      expect(s.repo.auditRows.filter((a) => a.action === 'update').map((a) => [a.actor, a.environmentKey, a.changes])).toEqual([['user:alice', 'production', { enabled: { from: false, to: true } }]]);
      expect(s.announced.at(-1)).toEqual({ tenantId: TENANT, environments: ['production'], flagKey: 'checkout', version: 1 });
      expect((await problemOf(s.requests.apply(TENANT, 'production', BOB, 'checkout', created.id))).extensions).toEqual({ state: 'applied' });
    });

    it('rejected from pending or approved (its author may withdraw it), and then neither approved nor applied', async () => {
      const a = await request({ enabled: true });
      expect((await s.requests.reject(TENANT, 'production', ALICE, 'checkout', a.id, 'not yet')).state).toBe('rejected');
      expect((await problemOf(s.requests.approve(TENANT, 'production', BOB, 'checkout', a.id))).extensions).toEqual({ state: 'rejected' });
      const b = await request({ enabled: true });
      await s.requests.approve(TENANT, 'production', BOB, 'checkout', b.id);
      expect((await s.requests.reject(TENANT, 'production', BOB, 'checkout', b.id)).state).toBe('rejected');
      expect((await problemOf(s.requests.apply(TENANT, 'production', BOB, 'checkout', b.id))).extensions).toEqual({ state: 'rejected' });
      expect((await s.service.get(TENANT, 'production', 'checkout')).env.enabled).toBe(false);
    });

    it('stale once the flag moved on: approval and apply refused (409 naming both versions), the request left stale', async () => {
      const a = await request({ enabled: true });
      const b = await request({ rules: [] });
      await s.requests.approve(TENANT, 'production', BOB, 'checkout', b.id);
      await s.service.update(TENANT, 'production', ALICE, 'checkout', { name: 'Renamed' });
      const p = await problemOf(s.requests.approve(TENANT, 'production', BOB, 'checkout', a.id));
      expect([p.problem.status, p.problem.slug, p.extensions]).toEqual([409, 'change-request-stale', { baseVersion: '"1.1"', currentVersion: '"2.1"' }]);
      expect((await s.requests.get(TENANT, 'production', 'checkout', a.id)).state).toBe('stale');
      expect((await problemOf(s.requests.apply(TENANT, 'production', BOB, 'checkout', b.id))).problem.slug).toBe('change-request-stale');
      expect((await s.requests.get(TENANT, 'production', 'checkout', b.id)).state).toBe('stale');
      expect(s.repo.auditRows.filter((a) => a.action === 'update').map((a) => a.changes)).toEqual([{ name: { from: 'Checkout', to: 'Renamed' } }]);
    });

    it('a patch the rules refuse at apply is the 422 of PATCH, and the request stays approved', async () => {
      const created = await request({ defaultValue: 'yes' });
      await s.requests.approve(TENANT, 'production', BOB, 'checkout', created.id);
      expect((await problemOf(s.requests.apply(TENANT, 'production', BOB, 'checkout', created.id))).problem.status).toBe(422);
      expect((await s.requests.get(TENANT, 'production', 'checkout', created.id)).state).toBe('approved');
    });

    it('with executeAt, apply schedules the change as its author, approved by its approver', async () => {
      const executeAt = new Date('2026-03-02T09:00:00Z');
      const created = await s.requests.create(TENANT, 'production', ALICE, 'checkout', { patch: { enabled: true }, executeAt });
      await s.requests.approve(TENANT, 'production', BOB, 'checkout', created.id);
      expect((await s.requests.apply(TENANT, 'production', BOB, 'checkout', created.id)).state).toBe('applied');
      expect((await s.service.get(TENANT, 'production', 'checkout')).env.enabled).toBe(false);
      expect(await s.schedules.list(TENANT, 'production', 'checkout')).toEqual([expect.objectContaining({ author: 'user:alice', approvedBy: 'user:bob', executeAt, state: 'scheduled' })]);
      s.clock.now = executeAt;
      expect(await s.schedules.executeNext()).toMatchObject({ state: 'applied' });
      expect((await s.service.get(TENANT, 'production', 'checkout')).env.enabled).toBe(true);
    });
  });
});
