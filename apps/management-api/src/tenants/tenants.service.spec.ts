import type { DomainEvent } from '../webhooks/webhook-events';
import { Logger } from '@nestjs/common';
import { FakePubSub } from '@flagship/redis/testing';
import type { TenantRole } from '@flagship/domain';
import type { Tx } from '@flagship/persistence';
import { type CallerContext, encodeCursor } from '@flagship/service-kit';
import { Quotas, type QuotaSettings } from '../quotas/quotas';
import { FakeQuotasRepository } from '../quotas/quotas.repository.fake';
import { FAKE_TX, inlineTransactions } from '../testing/inline-transactions';
import { problemOf } from '../testing/problem-of';
import { pendingSubject, type UserEntity } from '../users/user.entity';
import { FakeInvitationsRepository } from './invitations.repository.fake';
import { InvitationsService } from './invitations.service';
import { TenantsRepository } from './tenants.repository';
import { FakeTenantsRepository } from './tenants.repository.fake';
import { TenantsService, toTenantUserDto } from './tenants.service';

const DAY = 86_400_000;

describe('TenantsService', () => {
  let repo: FakeTenantsRepository;
  let pubsub: FakePubSub;
  let service: TenantsService;
  let quotas: Quotas;
  let recorded: DomainEvent[];
  let ann: UserEntity;
  let bea: UserEntity;
  const QUOTA = 3;

  beforeEach(() => {
    repo = new FakeTenantsRepository();
    pubsub = new FakePubSub();
    quotas = new Quotas({ QUOTA_TENANTS_PER_USER: QUOTA } as QuotaSettings, new FakeQuotasRepository({ 'tenants-per-user': (u) => repo.countCreatedBy(u) }), inlineTransactions);
    recorded = [];
    service = new TenantsService(inlineTransactions, repo, { SANDBOX_DAYS: 14 }, pubsub, quotas, { record: async (_m, _t, ...e) => void recorded.push(...e) });
    ann = repo.seedUser('ann@acme.test');
    bea = repo.seedUser('bea@acme.test');
  });

  /** A tenant `creator` made (as POST /api/tenants does), with `members` joined in order. */
  const team = async (creator: UserEntity, members: Array<[UserEntity, TenantRole]> = []) => {
    const t = await service.create(creator, { name: 'Team', primaryEmail: creator.email });
    for (const [u, role] of members) await repo.addMember(FAKE_TX, t.id, u.id, role);
    return t.id;
  };
  const roleOf = async (tenantId: string, userId: string) => (await repo.membershipWithTenant(tenantId, userId))?.role ?? null;
  const announced = () => pubsub.sent.filter((s) => s.channel === 'membership-changed').map((s) => s.message);

  it('the fake is a repository', () => {
    expect(repo).toBeInstanceOf(TenantsRepository);
  });

  describe('creating a tenant', () => {
    it('makes its creator admin, on the free plan; a sandbox expires SANDBOX_DAYS later', async () => {
      const t = await service.create(ann, { name: 'Acme', primaryEmail: 'ops@acme.test' });
      expect(t).toEqual({
        id: expect.any(String),
        name: 'Acme',
        primaryEmail: 'ops@acme.test',
        contactName: '',
        isSandbox: false,
        subscription: { plan: 'free', status: 'active' },
        createdAt: expect.stringMatching(/Z$/),
      });
      expect(await repo.tenantsOfUser(ann.id)).toEqual([expect.objectContaining({ tenant: expect.objectContaining({ id: t.id, createdBy: ann.id }), role: 'admin' })]);
      expect(repo.tenants.get(t.id)?.sandboxExpiresAt).toBeNull();

      const before = Date.now();
      const sandbox = await service.create(ann, { name: 'Play', primaryEmail: 'ops@acme.test', contactName: 'Ops', isSandbox: true });
      expect(sandbox).toMatchObject({ isSandbox: true, contactName: 'Ops' });
      const expires = repo.tenants.get(sandbox.id)!.sandboxExpiresAt!.getTime();
      expect(expires).toBeGreaterThanOrEqual(before + 14 * DAY);
      expect(expires).toBeLessThanOrEqual(Date.now() + 14 * DAY);
    });

    it('runs the created hooks in its transaction, once the creator is admin (the sandbox seeds its demo data there)', async () => {
      const seen: Array<{ m: Tx; name: string; creator: string; role: TenantRole | null }> = [];
      service.addCreatedHook({ onTenantCreated: async (m, tenant, creator) => void seen.push({ m, name: tenant.name, creator: creator.id, role: await roleOf(tenant.id, creator.id) }) });
      await service.create(ann, { name: 'Hooked', primaryEmail: 'ops@acme.test' });
      expect(seen).toEqual([{ m: FAKE_TX, name: 'Hooked', creator: ann.id, role: 'admin' }]);
    });

    it('counts the tenants a user created against QUOTA_TENANTS_PER_USER (409 naming it), their sign-up tenant included; stepping down or leaving frees no place', async () => {
      // Sign-up makes the personal tenant without asking the quota.
      const personal = await inlineTransactions.run((m) => service.createWithAdmin(m, ann, { name: "Ann's workspace", primaryEmail: ann.email, contactName: '', isSandbox: false }));
      const second = await team(ann, [[bea, 'admin']]);
      await team(ann);
      const over = await problemOf(service.create(ann, { name: 'One too many', primaryEmail: ann.email }));
      expect(over.problem).toMatchObject({ status: 409, slug: 'quota-exceeded' });
      expect(over.extensions).toMatchObject({ quota: 'tenants-per-user', limit: QUOTA, current: QUOTA });
      expect(repo.countCreatedBy(ann.id)).toBe(QUOTA);

      // Ann hands the second tenant to Bea and leaves it: still three made.
      await service.removeUser(second, ann.id);
      expect((await problemOf(service.create(ann, { name: 'Still too many', primaryEmail: ann.email }))).problem.slug).toBe('quota-exceeded');
      // Tenants Ann is a member of but did not make count for their makers only.
      await repo.addMember(FAKE_TX, personal.id, bea.id, 'admin');
      expect((await service.create(bea, { name: "Bea's own", primaryEmail: bea.email })).name).toBe("Bea's own");
    });
  });

  describe('listing', () => {
    it("a user sees their tenants in joining order; a client only its token's tenant, or none once it is gone", async () => {
      const first = await team(ann);
      const joined = await team(bea, [[ann, 'viewer']]);
      const user: CallerContext = { kind: 'user', callerId: `user:${ann.id}` };
      expect((await service.list(user, ann)).map((t) => t.id)).toEqual([first, joined]);
      const client = (tenantId?: string): CallerContext => ({ kind: 'client', callerId: 'client:ffc_1', ...(tenantId ? { tenantId } : {}), scopes: [] });
      expect((await service.list(client(joined), undefined)).map((t) => t.id)).toEqual([joined]);
      expect(await service.list(client('00000000-0000-4000-8000-000000000000'), undefined)).toEqual([]);
      expect(await service.list(client(), undefined)).toEqual([]);
    });

    it('pages members by cursor; someone added by e-mail who never signed in is listed as invited', async () => {
      const pending = repo.seedUser('new@acme.test', { idpSubject: pendingSubject('new@acme.test') });
      const t = await team(ann, [[bea, 'editor'], [pending, 'viewer']]);
      const first = await service.listUsers(t, { limit: 2 });
      expect(first.map((r) => r.user.id)).toEqual([ann.id, bea.id, pending.id]);
      const cursor = encodeCursor({ at: first[1].membership.createdAt.toISOString(), id: first[1].user.id });
      const rest = await service.listUsers(t, { limit: 2, cursor });
      expect(rest.map((r) => r.user.id)).toEqual([pending.id]);
      expect(first.map(toTenantUserDto).map((u) => [u.email, u.role, u.status])).toEqual([
        ['ann@acme.test', 'admin', 'active'],
        ['bea@acme.test', 'editor', 'active'],
        ['new@acme.test', 'viewer', 'invited'],
      ]);
    });
  });

  describe('membership changes', () => {
    it('changes a role and tells every replica who changed', async () => {
      const t = await team(ann, [[bea, 'viewer']]);
      const changed = await service.changeRole(t, bea.id, 'editor');
      expect(changed).toMatchObject({ userId: bea.id, email: 'bea@acme.test', role: 'editor', status: 'active' });
      expect(await roleOf(t, bea.id)).toBe('editor');
      expect(announced()).toEqual([{ tenantId: t, userId: bea.id }]);
      expect(recorded).toEqual([{ type: 'member.updated', data: { userId: bea.id, action: 'role-changed', from: 'viewer', role: 'editor' } }]);
      await service.removeUser(t, bea.id);
      expect(recorded[1]).toEqual({ type: 'member.updated', data: { userId: bea.id, action: 'removed', from: 'editor', role: null } });
    });

    it('refuses someone who is not a member here with 404 (another tenant\'s member, an unknown or malformed id), changing nothing', async () => {
      const t = await team(ann);
      await team(bea);
      for (const who of [bea.id, '00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
        expect((await problemOf(service.changeRole(t, who, 'admin'))).problem).toMatchObject({ status: 404, slug: 'member-not-found' });
        expect((await problemOf(service.removeUser(t, who))).problem).toMatchObject({ status: 404, slug: 'member-not-found' });
      }
      expect(announced()).toEqual([]);
      expect(await roleOf(t, ann.id)).toBe('admin');
    });

    it('never leaves a tenant without an admin: the last one can neither step down nor be removed (409); with a second admin both can', async () => {
      const t = await team(ann, [[bea, 'editor']]);
      for (const role of ['editor', 'viewer'] as const) {
        expect((await problemOf(service.changeRole(t, ann.id, role))).problem).toMatchObject({ status: 409, slug: 'last-admin' });
      }
      expect((await problemOf(service.removeUser(t, ann.id))).problem).toMatchObject({ status: 409, slug: 'last-admin' });
      // Re-stating the last admin's role is no step down.
      expect((await service.changeRole(t, ann.id, 'admin')).role).toBe('admin');
      await service.changeRole(t, bea.id, 'admin');
      await service.changeRole(t, ann.id, 'viewer');
      expect((await problemOf(service.removeUser(t, bea.id))).problem.slug).toBe('last-admin');
      await service.removeUser(t, ann.id);
      expect(await roleOf(t, ann.id)).toBeNull();
      expect(announced()).toEqual([
        { tenantId: t, userId: ann.id },
        { tenantId: t, userId: bea.id },
        { tenantId: t, userId: ann.id },
        { tenantId: t, userId: ann.id },
      ]);
    });

    it('runs the admin-left hooks in the transaction of a demotion or removal of an admin, and only then', async () => {
      const left: Array<{ m: Tx; tenantId: string; userId: string }> = [];
      service.addAdminLeftHook({ onAdminLeft: async (m, tenantId, userId) => void left.push({ m, tenantId, userId }) });
      const cid = repo.seedUser('cid@acme.test');
      const t = await team(ann, [[bea, 'admin'], [cid, 'editor']]);
      await service.changeRole(t, cid.id, 'viewer'); // not an admin
      await service.changeRole(t, cid.id, 'admin'); // promoted
      await service.changeRole(t, bea.id, 'admin'); // admin stays admin
      expect(left).toEqual([]);
      await service.changeRole(t, bea.id, 'editor');
      await service.removeUser(t, cid.id);
      await service.removeUser(t, bea.id); // an editor by now
      expect(left).toEqual([
        { m: FAKE_TX, tenantId: t, userId: bea.id },
        { m: FAKE_TX, tenantId: t, userId: cid.id },
      ]);
      // A refused change (the last admin) runs none.
      await problemOf(service.changeRole(t, ann.id, 'viewer'));
      expect(left).toHaveLength(2);
    });

    it("an inviter who stops being admin (demoted or removed) takes their pending invitations with them; others' stay", async () => {
      const invitationsRepo = new FakeInvitationsRepository();
      const invitations = new InvitationsService(inlineTransactions, invitationsRepo, quotas, service, { INVITATION_TTL_DAYS: 14 });
      invitations.onModuleInit();
      const cid = repo.seedUser('cid@acme.test');
      const t = await team(ann, [[bea, 'admin'], [cid, 'admin']]);
      const send = (email: string, by: UserEntity) => invitationsRepo.upsertPending(FAKE_TX, t, email, 'viewer', by.id, 14 * DAY);
      const byAnn = await send('x@else.test', ann);
      await send('y@else.test', bea);
      await send('z@else.test', cid);
      await service.changeRole(t, bea.id, 'viewer');
      await service.removeUser(t, cid.id);
      expect((await invitations.pendingOfTenant(t)).map((i) => i.id)).toEqual([byAnn.id]);
    });

    it('a change Redis cannot announce is kept (replicas see it when their cached callers expire)', async () => {
      const t = await team(ann, [[bea, 'viewer']]);
      pubsub.down = true;
      const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
      try {
        expect((await service.changeRole(t, bea.id, 'editor')).role).toBe('editor');
        await service.removeUser(t, bea.id);
        expect(warn).toHaveBeenCalledTimes(2);
      } finally {
        warn.mockRestore();
      }
      expect(await roleOf(t, bea.id)).toBeNull();
    });
  });
});
