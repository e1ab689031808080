import { createDataSource, type DataSource, withTransaction } from '@flagship/persistence';
import { createTestDatabase, describeAgreement, type TestDatabase } from '@flagship/testing';
import { FAKE_TX } from '../testing/inline-transactions';
import { type InvitationsRepository, SqlInvitationsRepository } from './invitations.repository';
import { FakeInvitationsRepository } from './invitations.repository.fake';

/**
 * The same cases against the real repository (Postgres) and its in-memory twin, so the service's
 * unit tests, which run on the fake, prove what the real one does.
 */
describe('InvitationsRepository: the fake agrees with Postgres', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let tenantId: string;
  let otherTenantId: string;
  let admin: string;
  let viewer: string;
  let outsider: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    ds = createDataSource({ url: db.url, poolSize: 2 });
    await ds.initialize();
    [{ id: tenantId }, { id: otherTenantId }] = await ds.query(`INSERT INTO tenants (name, primary_email) VALUES ('Acme', 'ops@acme.test'), ('Other', 'ops@other.test') RETURNING id`);
    [{ id: admin }, { id: viewer }, { id: outsider }] = await ds.query(
      `INSERT INTO users (idp_subject, email) VALUES ('s-admin', 'Admin@acme.test'), ('s-viewer', 'viewer@acme.test'), ('s-out', 'out@else.test') RETURNING id`,
    );
    await ds.query(`INSERT INTO memberships (tenant_id, user_id, role) VALUES ($1, $2, 'admin'), ($1, $3, 'viewer')`, [tenantId, admin, viewer]);
  });
  afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });

  type Subject = { repo: InvitationsRepository; tx: <T>(work: (m: typeof FAKE_TX) => Promise<T>) => Promise<T>; reset: () => Promise<void> };

  const real = (): Subject => ({
    repo: new SqlInvitationsRepository(ds),
    tx: (work) => withTransaction(ds, work),
    reset: async () => {
      await ds.query(`DELETE FROM invitations`);
      await ds.query(`DELETE FROM memberships WHERE user_id = $1`, [outsider]);
    },
  });
  const fake = (): Subject => {
    const repo = new FakeInvitationsRepository();
    repo.now = Date.now();
    repo.tenantNames.set(tenantId, 'Acme');
    repo.tenantNames.set(otherTenantId, 'Other');
    repo.members.push({ tenantId, userId: admin, email: 'Admin@acme.test', role: 'admin' }, { tenantId, userId: viewer, email: 'viewer@acme.test', role: 'viewer' });
    repo.emails.set(outsider, 'out@else.test');
    return { repo, tx: (work) => work(FAKE_TX), reset: async () => undefined };
  };

  describeAgreement({ Postgres: real, 'the fake': fake }, (subject) => {
    let s: Subject;
    beforeEach(() => {
      s = subject();
    });

    it('finds members by e-mail (any case) and locks their role; nobody else', async () => {
      await s.tx(async (m) => {
        expect(await s.repo.isMemberByEmail(m, tenantId, 'admin@ACME.test')).toBe(true);
        expect(await s.repo.isMemberByEmail(m, tenantId, 'out@else.test')).toBe(false);
        expect(await s.repo.isMemberByEmail(m, otherTenantId, 'admin@acme.test')).toBe(false);
        expect(await s.repo.lockRole(m, tenantId, admin)).toBe('admin');
        expect(await s.repo.lockRole(m, tenantId, viewer)).toBe('viewer');
        expect(await s.repo.lockRole(m, tenantId, outsider)).toBeNull();
      });
    });

    it('one pending invitation per tenant and e-mail: re-inviting replaces role, inviter and expiry', async () => {
      const first = await s.tx((m) => s.repo.upsertPending(m, tenantId, 'grace@acme.test', 'editor', admin, 60_000));
      expect(first).toMatchObject({ tenantId, tenantName: 'Acme', email: 'grace@acme.test', role: 'editor', status: 'pending', invitedBy: admin, respondedAt: null });
      expect(first.expiresAt.getTime() - first.createdAt.getTime()).toBeGreaterThanOrEqual(59_000);
      const again = await s.tx((m) => s.repo.upsertPending(m, tenantId, 'GRACE@acme.test', 'admin', null, 3_600_000));
      expect([again.id, again.role, again.invitedBy, again.expiresAt > first.expiresAt]).toEqual([first.id, 'admin', null, true]);
      expect((await s.repo.pendingOfTenant(tenantId)).map((i) => i.id)).toEqual([first.id]);
      expect((await s.repo.pendingForEmail('Grace@Acme.test')).map((i) => i.id)).toEqual([first.id]);
      expect(await s.repo.pendingOfTenant(otherTenantId)).toEqual([]);
      await s.tx(async (m) => {
        expect(await s.repo.hasPending(m, tenantId, 'grace@acme.test')).toBe(true);
        expect(await s.repo.hasPending(m, otherTenantId, 'grace@acme.test')).toBe(false);
      });
    });

    it('an expired invitation is invisible to every read and goes with purgeExpired', async () => {
      const expired = await s.tx((m) => s.repo.upsertPending(m, tenantId, 'late@acme.test', 'viewer', admin, -1000));
      const live = await s.tx((m) => s.repo.upsertPending(m, tenantId, 'soon@acme.test', 'viewer', admin, 60_000));
      expect((await s.repo.pendingOfTenant(tenantId)).map((i) => i.id)).toEqual([live.id]);
      expect(await s.repo.pendingForEmail('late@acme.test')).toEqual([]);
      await s.tx(async (m) => {
        expect(await s.repo.hasPending(m, tenantId, 'late@acme.test')).toBe(false);
        expect(await s.repo.lockPendingForEmail(m, expired.id, 'late@acme.test')).toBeNull();
      });
      expect(await s.repo.deletePending(tenantId, expired.id)).toBe(false);
      await s.tx((m) => s.repo.purgeExpired(m, tenantId));
      // Re-inviting the e-mail after the purge is a new invitation.
      const renewed = await s.tx((m) => s.repo.upsertPending(m, tenantId, 'late@acme.test', 'viewer', admin, 60_000));
      expect(renewed.id).not.toBe(expired.id);
    });

    it("withdraws an inviter's pending invitations in one tenant only", async () => {
      const mine = await s.tx((m) => s.repo.upsertPending(m, tenantId, 'a@x.test', 'viewer', admin, 60_000));
      const theirs = await s.tx((m) => s.repo.upsertPending(m, tenantId, 'b@x.test', 'viewer', viewer, 60_000));
      const elsewhere = await s.tx((m) => s.repo.upsertPending(m, otherTenantId, 'c@x.test', 'viewer', admin, 60_000));
      expect(await s.tx((m) => s.repo.deletePendingInvitedBy(m, tenantId, admin))).toBe(1);
      expect((await s.repo.pendingOfTenant(tenantId)).map((i) => i.id)).toEqual([theirs.id]);
      expect((await s.repo.pendingOfTenant(otherTenantId)).map((i) => i.id)).toEqual([elsewhere.id]);
      expect(await s.repo.deletePending(tenantId, mine.id)).toBe(false);
      expect(await s.repo.deletePending(otherTenantId, theirs.id)).toBe(false);
      expect(await s.repo.deletePending(tenantId, 'not-a-uuid')).toBe(false);
      expect(await s.repo.deletePending(tenantId, theirs.id)).toBe(true);
    });

    it('answering: only the named e-mail locks it; joining adds a membership once; the answer leaves it pending no more', async () => {
      const sent = await s.tx((m) => s.repo.upsertPending(m, tenantId, 'out@else.test', 'editor', admin, 60_000));
      await s.tx(async (m) => {
        expect(await s.repo.lockPendingForEmail(m, sent.id, 'viewer@acme.test')).toBeNull();
        expect(await s.repo.lockPendingForEmail(m, 'not-a-uuid', 'out@else.test')).toBeNull();
        const row = await s.repo.lockPendingForEmail(m, sent.id, 'OUT@else.test');
        expect(row?.id).toBe(sent.id);
        expect(await s.repo.joinTenant(m, tenantId, outsider, 'editor')).toBe(true);
        expect(await s.repo.joinTenant(m, tenantId, outsider, 'admin')).toBe(false);
        expect(await s.repo.respond(m, tenantId, sent.id, 'accepted')).toBeInstanceOf(Date);
      });
      await s.tx(async (m) => {
        expect(await s.repo.lockRole(m, tenantId, outsider)).toBe('editor');
        expect(await s.repo.lockPendingForEmail(m, sent.id, 'out@else.test')).toBeNull();
        expect(await s.repo.isMemberByEmail(m, tenantId, 'out@else.test')).toBe(true);
      });
      expect(await s.repo.pendingForEmail('out@else.test')).toEqual([]);
    });
  });
});
