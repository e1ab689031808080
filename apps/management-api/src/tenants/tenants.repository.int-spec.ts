import { randomUUID } from 'node:crypto';
import { isUniqueViolation, SHARED_ENTITIES } from '@flagship/persistence';
import { inFakeTransaction, type InTransaction } from '@flagship/persistence/testing';
import { describeAgreement, testDataSource } from '@flagship/testing';
import { UserEntity } from '../users/user.entity';
import { MembershipEntity } from './membership.entity';
import { SqlTenantsRepository, type TenantsRepository } from './tenants.repository';
import { FakeTenantsRepository } from './tenants.repository.fake';

const fields = { contactName: 'Ops', isSandbox: false, sandboxExpiresAt: null, plan: 'free' } as const;

/** Sorted as the repository promises: by when the membership began, then by id. */
const inJoiningOrder = <T>(rows: T[], at: (r: T) => Date, id: (r: T) => string): T[] =>
  [...rows].sort((a, b) => at(a).getTime() - at(b).getTime() || (id(a) < id(b) ? -1 : id(a) > id(b) ? 1 : 0));

/**
 * The same cases against the real repository (Postgres) and its in-memory twin, so the unit tests
 * that run on the fake (tenants, the authorization matrix) prove what the real one does.
 */
describe('TenantsRepository: the fake agrees with Postgres', () => {
  const pg = testDataSource({ entities: [...SHARED_ENTITIES, UserEntity, MembershipEntity] });

  type Subject = { repo: TenantsRepository; tx: InTransaction; user: (email: string) => Promise<string> };

  const real = (): Subject => ({
    repo: new SqlTenantsRepository(pg.ds),
    tx: pg.inTransaction,
    user: async (email) => ((await pg.ds.query(`INSERT INTO users (idp_subject, email) VALUES ($1, $2) RETURNING id`, [`s-${randomUUID()}`, email])) as Array<{ id: string }>)[0].id,
  });
  const fake = (): Subject => {
    const repo = new FakeTenantsRepository();
    return { repo, tx: inFakeTransaction, user: async (email) => repo.seedUser(email).id };
  };

  describeAgreement({ Postgres: real, 'the fake': fake }, (subject) => {
    let s: Subject;
    let n = 0;
    beforeEach(() => {
      s = subject();
    });
    /** A fresh e-mail per call (the users table keeps e-mails unique across the file). */
    const email = (name: string) => `${name}-${++n}-${randomUUID().slice(0, 8)}@acme.test`;

    it('creates and finds tenants; a malformed or unknown id names none; updates what it is given', async () => {
      const creator = await s.user(email('creator'));
      const t = await s.tx((m) => s.repo.create(m, { ...fields, name: 'Acme', primaryEmail: 'ops@acme.test', createdBy: creator }));
      expect(t).toMatchObject({ name: 'Acme', primaryEmail: 'ops@acme.test', contactName: 'Ops', plan: 'free', subscriptionStatus: 'active', zeroRated: false, hostedProviderAllowed: false, createdBy: creator });
      expect(t.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(t.createdAt).toBeInstanceOf(Date);
      expect(await s.repo.findById(t.id)).toMatchObject({ id: t.id, name: 'Acme' });
      expect(await s.repo.findById('not-a-uuid')).toBeNull();
      expect(await s.repo.findById(randomUUID())).toBeNull();
      expect(await s.repo.update(t.id, { zeroRated: true, plan: 'premium' })).toMatchObject({ id: t.id, zeroRated: true, plan: 'premium', hostedProviderAllowed: false });
      expect(await s.repo.update(t.id, {})).toMatchObject({ zeroRated: true, plan: 'premium' });
      expect(await s.repo.update('not-a-uuid', { zeroRated: true })).toBeNull();
      expect(await s.repo.update(randomUUID(), { zeroRated: true })).toBeNull();
    });

    it("memberships: one per tenant and user (a second is a unique violation), read with the tenant; a user's tenants in joining order", async () => {
      const ann = await s.user(email('ann'));
      const [a, b, c] = await Promise.all(['A', 'B', 'C'].map((name) => s.tx((m) => s.repo.create(m, { ...fields, name, primaryEmail: 'x@acme.test', createdBy: ann }))));
      await s.tx((m) => s.repo.addMember(m, b.id, ann, 'viewer'));
      await s.tx((m) => s.repo.addMember(m, a.id, ann, 'admin'));
      const added = await s.tx((m) => s.repo.addMember(m, c.id, ann, 'editor'));
      expect(added).toMatchObject({ tenantId: c.id, userId: ann, role: 'editor', lastAccessedAt: null });
      const twice = await s.tx((m) => s.repo.addMember(m, c.id, ann, 'admin')).catch((e: unknown) => e);
      expect(isUniqueViolation(twice)).toBe(true);

      expect(await s.repo.membershipWithTenant(a.id, ann)).toMatchObject({ tenant: { id: a.id, name: 'A' }, role: 'admin', lastAccessedAt: null });
      expect(await s.repo.membershipWithTenant(a.id, randomUUID())).toBeNull();
      expect(await s.repo.membershipWithTenant('not-a-uuid', ann)).toBeNull();

      const mine = await s.repo.tenantsOfUser(ann);
      expect(mine.map((x) => [x.tenant.name, x.role]).sort()).toEqual([['A', 'admin'], ['B', 'viewer'], ['C', 'editor']]);
      expect(mine).toEqual(inJoiningOrder(mine, (x) => x.joinedAt, (x) => x.tenant.id));
      expect(await s.repo.tenantsOfUser(randomUUID())).toEqual([]);
    });

    it('members: keyset pages of limit + 1 rows in joining order, every member once; another tenant\'s never', async () => {
      const owner = await s.user(email('owner'));
      const t = await s.tx((m) => s.repo.create(m, { ...fields, name: 'Team', primaryEmail: 'x@acme.test', createdBy: owner }));
      const other = await s.tx((m) => s.repo.create(m, { ...fields, name: 'Other', primaryEmail: 'x@acme.test', createdBy: owner }));
      const ids = [owner];
      await s.tx((m) => s.repo.addMember(m, t.id, owner, 'admin'));
      for (const name of ['b', 'c', 'd']) {
        const id = await s.user(email(name));
        ids.push(id);
        await s.tx((m) => s.repo.addMember(m, t.id, id, 'viewer'));
      }
      const elsewhere = await s.user(email('elsewhere'));
      await s.tx((m) => s.repo.addMember(m, other.id, elsewhere, 'admin'));

      const all = await s.repo.members(t.id, 10);
      expect(all.map((r) => r.user.id).sort()).toEqual([...ids].sort());
      expect(all).toEqual(inJoiningOrder(all, (r) => r.membership.createdAt, (r) => r.user.id));
      expect(all[0]).toMatchObject({ user: { id: all[0].membership.userId, email: expect.stringContaining('@acme.test') }, membership: { tenantId: t.id } });
      // Page by page with limit 2: three rows, then the cursor of the second.
      const first = await s.repo.members(t.id, 2);
      expect(first.map((r) => r.user.id)).toEqual(all.slice(0, 3).map((r) => r.user.id));
      const cursor = { at: first[1].membership.createdAt.toISOString(), id: first[1].user.id };
      expect((await s.repo.members(t.id, 2, cursor)).map((r) => r.user.id)).toEqual(all.slice(2).map((r) => r.user.id));
    });

    it('locks, changes and removes memberships of one tenant; touching records the last access', async () => {
      const ann = await s.user(email('ann'));
      const bea = await s.user(email('bea'));
      const t = await s.tx((m) => s.repo.create(m, { ...fields, name: 'T', primaryEmail: 'x@acme.test', createdBy: ann }));
      const other = await s.tx((m) => s.repo.create(m, { ...fields, name: 'O', primaryEmail: 'x@acme.test', createdBy: ann }));
      await s.tx((m) => s.repo.addMember(m, t.id, ann, 'admin'));
      await s.tx((m) => s.repo.addMember(m, t.id, bea, 'viewer'));
      await s.tx((m) => s.repo.addMember(m, other.id, bea, 'admin'));

      const locked = await s.tx((m) => s.repo.lockMemberships(m, t.id));
      expect(locked.map((ms) => [ms.userId, ms.role]).sort()).toEqual([[ann, 'admin'], [bea, 'viewer']].sort());
      const changed = await s.tx((m) => s.repo.setRole(m, t.id, bea, 'editor'));
      expect(changed).toMatchObject({ membership: { tenantId: t.id, userId: bea, role: 'editor' }, user: { id: bea } });
      expect((await s.repo.membershipWithTenant(other.id, bea))?.role).toBe('admin');

      await s.repo.touchMembership(t.id, bea);
      const touched = await s.repo.membershipWithTenant(t.id, bea);
      expect(touched?.lastAccessedAt).toBeInstanceOf(Date);
      expect((await s.repo.membershipWithTenant(other.id, bea))?.lastAccessedAt).toBeNull();

      await s.tx((m) => s.repo.removeMember(m, t.id, bea));
      expect(await s.repo.membershipWithTenant(t.id, bea)).toBeNull();
      expect((await s.repo.tenantsOfUser(bea)).map((x) => x.tenant.id)).toEqual([other.id]);
      // Removing someone who is not a member changes nothing.
      await s.tx((m) => s.repo.removeMember(m, t.id, bea));
      expect((await s.tx((m) => s.repo.lockMemberships(m, t.id))).map((ms) => ms.userId)).toEqual([ann]);
    });
  });
});
