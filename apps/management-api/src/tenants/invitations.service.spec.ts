import type { TenantRole } from '@flagship/domain';
import { Quotas, type QuotaSettings } from '../quotas/quotas';
import { FakeQuotasRepository } from '../quotas/quotas.repository.fake';
import { FAKE_TX, inlineTransactions } from '../testing/inline-transactions';
import { problemOf } from '../testing/problem-of';
import type { UserEntity } from '../users/user.entity';
import { InvitationsRepository } from './invitations.repository';
import { FakeInvitationsRepository } from './invitations.repository.fake';
import { InvitationsService } from './invitations.service';
import type { AdminLeftHook } from './tenants.service';

const TENANT = '00000000-0000-4000-8000-0000000000a1';
const OTHER_TENANT = '00000000-0000-4000-8000-0000000000b2';
const ALICE = '00000000-0000-4000-8000-0000000000c3';
const BOB = '00000000-0000-4000-8000-0000000000d4';
const DAY = 86_400_000;

const user = (id: string, email: string) => ({ id, email }) as UserEntity;
const verified = (email: string) => ({ email, verified: true });

describe('InvitationsService', () => {
  let repo: FakeInvitationsRepository;
  let service: InvitationsService;
  let hooks: AdminLeftHook[];
  let announced: string[];
  let joined: string[];
  const alice = user(ALICE, 'alice@flagship.test');

  beforeEach(() => {
    repo = new FakeInvitationsRepository();
    repo.tenantNames.set(TENANT, 'Acme');
    repo.tenantNames.set(OTHER_TENANT, 'Other');
    repo.members.push({ tenantId: TENANT, userId: ALICE, email: alice.email, role: 'admin' });
    repo.emails.set(ALICE, alice.email);
    // Bob has an account (he is a member elsewhere); grace@ has none.
    repo.emails.set(BOB, 'bob@flagship.test');
    repo.members.push({ tenantId: OTHER_TENANT, userId: BOB, email: 'bob@flagship.test', role: 'admin' });
    const settings = { QUOTA_INVITATIONS_PER_TENANT: 3 } as QuotaSettings;
    const quotas = new Quotas(settings, new FakeQuotasRepository({ 'invitations-per-tenant': (t) => repo.countPending(t) }), inlineTransactions);
    hooks = [];
    announced = [];
    joined = [];
    service = new InvitationsService(
      inlineTransactions,
      repo,
      quotas,
      {
        announceMembershipChanged: async (t, u) => void announced.push(`${t}:${u}`),
        addAdminLeftHook: (h) => void hooks.push(h),
        memberChanged: async (_m, t, d) => void joined.push(`${t}:${d.userId}:${d.action}:${d.role}`),
      },
      { INVITATION_TTL_DAYS: 14 },
    );
    service.onModuleInit();
  });

  const invite = (email: string, role: TenantRole = 'editor', inviter = alice) => service.invite(TENANT, inviter, { email, role });

  it('the fake is a repository', () => {
    expect(repo).toBeInstanceOf(InvitationsRepository);
  });

  it('does the same work whether or not the e-mail has an account: the same repository calls, in the same order, and the same answer', async () => {
    repo.calls.length = 0;
    const known = await invite('bob@flagship.test');
    const knownCalls = repo.calls.map((c) => c.method);
    repo.calls.length = 0;
    const stranger = await invite('grace@flagship.test');
    const strangerCalls = repo.calls.map((c) => c.method);
    expect(knownCalls).toEqual(strangerCalls);
    expect(knownCalls).toEqual(['lockRole', 'isMemberByEmail', 'purgeExpired', 'hasPending', 'upsertPending']);
    const shape = (d: Record<string, unknown>) => Object.keys(d).sort();
    expect(shape(known as unknown as Record<string, unknown>)).toEqual(shape(stranger as unknown as Record<string, unknown>));
    expect([known.status, stranger.status]).toEqual(['pending', 'pending']);
    expect(JSON.stringify(known)).not.toContain(BOB);
  });

  it('refuses an e-mail that is a member already (409), after the same lookup', async () => {
    const p = await problemOf(invite('ALICE@flagship.test'));
    expect(p.problem).toMatchObject({ status: 409, slug: 'member-exists' });
    expect(repo.rows.size).toBe(0);
  });

  it('expires 14 days after it is sent: then it is neither listed nor answerable, and re-inviting renews it', async () => {
    const sent = await invite('grace@flagship.test');
    expect(Date.parse(sent.expiresAt) - Date.parse(sent.createdAt)).toBe(14 * DAY);
    repo.now += 14 * DAY - 1;
    expect((await service.mine(verified('grace@flagship.test'))).map((i) => i.id)).toEqual([sent.id]);
    repo.now += 1;
    expect(await service.mine(verified('grace@flagship.test'))).toEqual([]);
    expect(await service.pendingOfTenant(TENANT)).toEqual([]);
    const late = await problemOf(service.accept(user(BOB, 'grace@flagship.test'), verified('grace@flagship.test'), sent.id));
    expect(late.problem).toMatchObject({ status: 404, slug: 'invitation-not-found' });
    expect(repo.members.filter((ms) => ms.tenantId === TENANT)).toHaveLength(1);
    // Re-inviting after expiry: a fresh 14 days.
    const again = await invite('grace@flagship.test');
    expect(Date.parse(again.expiresAt)).toBe(repo.now + 14 * DAY);
    expect((await service.mine(verified('grace@flagship.test'))).map((i) => i.status)).toEqual(['pending']);
  });

  it('is withdrawn when its inviter stops being an admin; others inviters\' and other tenants\' stay', async () => {
    repo.members.push({ tenantId: TENANT, userId: BOB, email: 'bob@flagship.test', role: 'admin' });
    const bob = user(BOB, 'bob@flagship.test');
    const byAlice = await invite('grace@flagship.test');
    const byBob = await invite('hana@flagship.test', 'viewer', bob);
    const elsewhere = await service.invite(OTHER_TENANT, bob, { email: 'ivy@flagship.test', role: 'viewer' });
    expect(hooks).toHaveLength(1);
    // TenantsService runs the hook in the transaction that demotes (or removes) Bob.
    await hooks[0].onAdminLeft(FAKE_TX, TENANT, BOB);
    expect((await service.pendingOfTenant(TENANT)).map((i) => i.id)).toEqual([byAlice.id]);
    expect((await service.pendingOfTenant(OTHER_TENANT)).map((i) => i.id)).toEqual([elsewhere.id]);
    expect(await service.mine(verified('hana@flagship.test'))).toEqual([]);
    expect((await problemOf(service.accept(user('00000000-0000-4000-8000-0000000000e5', 'hana@flagship.test'), verified('hana@flagship.test'), byBob.id))).problem.status).toBe(404);
  });

  it('refuses to write an invitation for an inviter who is no longer admin when the transaction runs (a demotion committed after the guard)', async () => {
    repo.members[0].role = 'editor';
    const p = await problemOf(invite('grace@flagship.test'));
    expect(p.problem).toMatchObject({ status: 403, slug: 'role-required' });
    expect(repo.rows.size).toBe(0);
  });

  it('caps pending invitations per tenant (409 quota-exceeded); re-inviting a pending e-mail adds none; expired, answered and withdrawn ones free a place', async () => {
    const a = await invite('a@flagship.test');
    await invite('b@flagship.test');
    await invite('c@flagship.test');
    const over = await problemOf(invite('d@flagship.test'));
    expect(over.problem).toMatchObject({ status: 409, slug: 'quota-exceeded' });
    expect(over.extensions).toMatchObject({ quota: 'invitations-per-tenant', limit: 3, current: 3 });
    expect(repo.countPending(TENANT)).toBe(3);
    // The same e-mail again: a new role, no new place.
    expect((await invite('A@flagship.test', 'admin')).id).toBe(a.id);
    // Another tenant has its own cap.
    await service.invite(OTHER_TENANT, user(BOB, 'bob@flagship.test'), { email: 'd@flagship.test', role: 'viewer' });
    // Withdrawn, declined, then expired: each frees one.
    await service.withdraw(TENANT, a.id);
    await invite('d@flagship.test');
    const e = await problemOf(invite('e@flagship.test'));
    expect(e.problem.slug).toBe('quota-exceeded');
    await service.decline(verified('b@flagship.test'), (await service.mine(verified('b@flagship.test')))[0].id);
    await invite('e@flagship.test');
    repo.now += 14 * DAY;
    for (const x of ['f', 'g', 'h']) await invite(`${x}@flagship.test`);
    expect((await service.pendingOfTenant(TENANT)).map((i) => i.email).sort()).toEqual(['f@flagship.test', 'g@flagship.test', 'h@flagship.test']);
  });

  it('accepting joins with the invitation\'s role, once, and announces it', async () => {
    const sent = await invite('grace@flagship.test', 'viewer');
    const grace = user('00000000-0000-4000-8000-0000000000f6', 'grace@flagship.test');
    const accepted = await service.accept(grace, verified('grace@flagship.test'), sent.id);
    expect([accepted.status, accepted.respondedAt]).toEqual(['accepted', new Date(repo.now).toISOString()]);
    expect(repo.members.find((ms) => ms.userId === grace.id)).toMatchObject({ tenantId: TENANT, role: 'viewer' });
    expect(announced).toEqual([`${TENANT}:${grace.id}`]);
    expect(joined).toEqual([`${TENANT}:${grace.id}:joined:viewer`]);
    expect((await problemOf(service.accept(grace, verified('grace@flagship.test'), sent.id))).problem.status).toBe(404);
    expect((await problemOf(service.accept(grace, { email: 'grace@flagship.test', verified: false }, sent.id))).problem.slug).toBe('email-not-verified');
  });
});
