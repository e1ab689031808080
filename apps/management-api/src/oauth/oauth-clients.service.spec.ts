import { type RevocationRecorder, RevocationUnavailableError, verifySecret } from '@flagship/oauth';
import { encodeCursor } from '@flagship/service-kit';
import { problemOf } from '../testing/problem-of';
import { OAuthClientsRepository } from './oauth-clients.repository';
import { FakeOAuthClientsRepository } from './oauth-clients.repository.fake';
import { oauthClientCursor, OAuthClientsService } from './oauth-clients.service';
import { resolveOAuthFeatureOptions } from './oauth-feature.options';

/** Records revocations in memory; `down` makes it fail like an unreachable Redis. */
class RecordingRevocations implements RevocationRecorder {
  readonly revoked: string[] = [];
  down = false;
  async revoke(clientId: string): Promise<void> {
    if (this.down) throw new RevocationUnavailableError('redis down');
    this.revoked.push(clientId);
  }
}

const TENANT = '00000000-0000-4000-8000-0000000000a1';
const OTHER_TENANT = '00000000-0000-4000-8000-0000000000b2';
const USER = '00000000-0000-4000-8000-0000000000c3';

describe('OAuthClientsService', () => {
  let repo: FakeOAuthClientsRepository;
  let revocations: RecordingRevocations;
  let service: OAuthClientsService;

  beforeEach(() => {
    repo = new FakeOAuthClientsRepository();
    revocations = new RecordingRevocations();
    service = new OAuthClientsService(repo, revocations, resolveOAuthFeatureOptions({ oauth: { issuer: 'https://i.test' }, publicBaseUrl: 'https://i.test' }));
  });

  it('the fake is a repository', () => {
    expect(repo).toBeInstanceOf(OAuthClientsRepository);
  });

  it('creates a client: id and secret formats, secret shown once and stored only as scrypt', async () => {
    const created = await service.create(TENANT, USER, { name: ' backend ', scopes: ['flags:read', 'flags:read', 'flags:evaluate'], productKeys: ['core'] }, false);
    expect(created.clientId).toMatch(/^ffc_[0-9A-Za-z]{22}$/);
    expect(created.clientSecret).toMatch(/^ffs_[A-Za-z0-9_-]{43}$/);
    expect(created).toMatchObject({ name: 'backend', scopes: ['flags:read', 'flags:evaluate'], productKeys: ['core'], createdBy: USER, secretRotatedAt: null });
    const stored = repo.rows.get(created.clientId)!;
    expect(stored.secretHash).toMatch(/^scrypt\$16384\$8\$1\$/);
    expect(stored.secretHash).not.toContain(created.clientSecret.slice(4));
    expect(await verifySecret(created.clientSecret, stored.secretHash)).toBe(true);
    const [listed] = await service.list(TENANT, { limit: 10 });
    expect(listed).not.toHaveProperty('clientSecret');
    expect(JSON.stringify(listed)).not.toContain('scrypt');
  });

  it('refuses unknown scopes, unknown and legacy product keys with 422 naming the field', async () => {
    const unknownScope = await problemOf(service.create(TENANT, USER, { name: 'x', scopes: ['flags:read', 'admin'] }, true));
    expect(unknownScope.problem.status).toBe(422);
    expect(unknownScope.extensions['errors']).toEqual({ scopes: expect.stringContaining('admin') });
    const legacy = await problemOf(service.create(TENANT, USER, { name: 'x', scopes: [], productKeys: ['partner_portal'] }, true));
    expect(legacy.problem.status).toBe(422);
    expect(legacy.extensions['errors']).toEqual({ productKeys: expect.stringContaining('legacy') });
    const unknown = await problemOf(service.create(TENANT, USER, { name: 'x', scopes: [], productKeys: ['nope'] }, true));
    expect(unknown.extensions['errors']).toEqual({ productKeys: expect.stringContaining('nope') });
    const blank = await problemOf(service.create(TENANT, USER, { name: '   ', scopes: [] }, false));
    expect(blank.extensions['errors']).toHaveProperty('name');
    expect(repo.rows.size).toBe(0);
  });

  it('lets only platform admins allow internal suite product keys (403), anyone the own product', async () => {
    const denied = await problemOf(service.create(TENANT, USER, { name: 'x', scopes: [], productKeys: ['core', 'insights'] }, false));
    expect(denied.problem).toMatchObject({ status: 403, slug: 'product-key-not-allowed' });
    expect(denied.extensions['productKeys']).toEqual(['insights']);
    const internal = await service.create(TENANT, USER, { name: 'x', scopes: [], productKeys: ['insights', 'studio'] }, true);
    expect(internal.productKeys).toEqual(['insights', 'studio']);
    expect((await service.create(TENANT, USER, { name: 'y', scopes: [], productKeys: ['core'] }, false)).productKeys).toEqual(['core']);
  });

  it('reads the internal list from configuration', async () => {
    service = new OAuthClientsService(
      repo,
      revocations,
      resolveOAuthFeatureOptions({ oauth: { issuer: 'i' }, publicBaseUrl: 'i', productKeys: { internal: ['atlas'] } }),
    );
    expect((await problemOf(service.create(TENANT, USER, { name: 'x', scopes: [], productKeys: ['atlas'] }, false))).problem.status).toBe(403);
    expect((await problemOf(service.create(TENANT, USER, { name: 'x', scopes: [], productKeys: ['insights'] }, true))).problem.status).toBe(422);
  });

  it('lists a tenant’s clients in creation order, by pages, without other tenants’ or deleted ones', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await service.create(TENANT, USER, { name: `c${i}`, scopes: [] }, false)).clientId);
      await new Promise((r) => setTimeout(r, 2));
    }
    await service.create(OTHER_TENANT, null, { name: 'theirs', scopes: [] }, false);
    await service.delete(TENANT, ids[1]);
    const first = await service.list(TENANT, { limit: 2 });
    expect(first.map((c) => c.clientId)).toEqual([ids[0], ids[2], ids[3]]); // limit + 1
    const second = await service.list(TENANT, { limit: 2, cursor: encodeCursor(oauthClientCursor(first[1])) });
    expect(second.map((c) => c.clientId)).toEqual([ids[3], ids[4]]);
    expect((await problemOf(service.list(TENANT, { limit: 2, cursor: encodeCursor({ at: 'yesterday', id: 'x' }) }))).problem.status).toBe(400);
  });

  it('deletes: revocation recorded first, then gone; 404 for another tenant’s or an unknown client', async () => {
    const mine = await service.create(TENANT, USER, { name: 'x', scopes: [] }, false);
    const theirs = await service.create(OTHER_TENANT, null, { name: 'y', scopes: [] }, false);
    const foreign = await problemOf(service.delete(TENANT, theirs.clientId));
    const unknown = await problemOf(service.delete(TENANT, 'ffc_doesnotexist0000000'));
    expect(foreign.problem).toMatchObject({ status: 404, slug: 'oauth-client-not-found' });
    expect(foreign.detail.replace(theirs.clientId, 'ID')).toBe(unknown.detail.replace('ffc_doesnotexist0000000', 'ID'));
    expect(revocations.revoked).toEqual([]);
    expect(await repo.findActive(OTHER_TENANT, theirs.clientId)).not.toBeNull();

    await service.delete(TENANT, mine.clientId);
    expect(revocations.revoked).toEqual([mine.clientId]);
    expect(await repo.findActive(TENANT, mine.clientId)).toBeNull();
    expect(repo.rows.get(mine.clientId)!.deletedAt).toBeInstanceOf(Date);
    expect((await problemOf(service.delete(TENANT, mine.clientId))).problem.status).toBe(404);
  });

  it('does not delete when the revocation cannot be recorded (503), so no token outlives a reported deletion', async () => {
    const mine = await service.create(TENANT, USER, { name: 'x', scopes: [] }, false);
    revocations.down = true;
    const unavailable = await problemOf(service.delete(TENANT, mine.clientId));
    expect(unavailable.problem).toMatchObject({ status: 503, slug: 'revocation-unavailable' });
    expect(unavailable.headers['Retry-After']).toBe('5');
    expect(await repo.findActive(TENANT, mine.clientId)).not.toBeNull();
  });

  it('rotates the secret: a new one shown once, the old hash replaced; 404 across tenants', async () => {
    const mine = await service.create(TENANT, USER, { name: 'x', scopes: ['flags:read'] }, false);
    const rotated = await service.rotateSecret(TENANT, mine.clientId);
    expect(rotated.clientSecret).not.toBe(mine.clientSecret);
    expect(rotated.secretRotatedAt).toEqual(expect.any(String));
    const hash = repo.rows.get(mine.clientId)!.secretHash;
    expect(await verifySecret(rotated.clientSecret, hash)).toBe(true);
    expect(await verifySecret(mine.clientSecret, hash)).toBe(false);
    expect((await problemOf(service.rotateSecret(OTHER_TENANT, mine.clientId))).problem.status).toBe(404);
  });
});
