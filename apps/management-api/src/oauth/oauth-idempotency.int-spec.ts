import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import { http } from '@flagship/testing';
import { ManagementApiFixture, type SignedUp } from '../testing/management-api.fixture';

/** Idempotency-Key against credentials and secrets, through the whole management-api (real HTTP, Postgres, Redis). */
describe('Idempotency-Key on /oauth/token and on answers holding a secret', () => {
  let f: ManagementApiFixture;
  let admin: SignedUp;
  let redis: Redis;

  beforeAll(async () => {
    f = await ManagementApiFixture.start();
    admin = await f.signUp();
    redis = new Redis(f.te.redis.url);
  });
  afterAll(async () => {
    redis?.disconnect();
    await f?.stop();
  });

  const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
  const postToken = (headers: Record<string, string>) =>
    http(`${f.url}/oauth/token`, { method: 'POST', body: 'grant_type=client_credentials', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers } });
  /** Every string value under this test's Redis prefix. */
  const redisStrings = async (): Promise<string[]> => {
    const values: string[] = [];
    for (const key of await redis.keys(`${f.te.redis.prefix}*`)) {
      if ((await redis.type(key)) === 'string') values.push((await redis.get(key)) ?? '');
    }
    return values;
  };

  it("never replays client A's access token to a request with the same key and wrong or no credentials", async () => {
    const client = await f.call('POST', '/api/oauth/clients', { token: admin.idToken, tenant: admin.tenantId, json: { name: 'a', scopes: ['flags:read'] } });
    expect(client.status).toBe(201);
    const key = randomUUID();
    const granted = await postToken({ authorization: basic(client.body.clientId, client.body.clientSecret), 'idempotency-key': key });
    expect(granted.status).toBe(200);
    const token: string = granted.body.access_token;

    for (const credentials of [{ authorization: basic(client.body.clientId, 'ffs_wrong') }, {}] as Record<string, string>[]) {
      const attack = await postToken({ ...credentials, 'idempotency-key': key });
      expect([attack.status, attack.body.error]).toEqual([401, 'invalid_client']);
      expect(attack.text).not.toContain(token);
      expect(attack.headers.get('idempotent-replayed')).toBeNull();
    }
    // Nothing of the answer was kept for anyone.
    for (const value of await redisStrings()) expect(value).not.toContain(token);
  });

  it('never keeps a new or rotated client secret in Redis; a retry with the same key gets 409 and no secret, and creates nothing', async () => {
    const key = randomUUID();
    const create = () =>
      f.call('POST', '/api/oauth/clients', { token: admin.idToken, tenant: admin.tenantId, json: { name: 'once', scopes: ['flags:read'] }, headers: { 'idempotency-key': key } });
    const created = await create();
    expect(created.status).toBe(201);
    const secret: string = created.body.clientSecret;
    expect(secret).toMatch(/^ffs_/);
    expect(await redis.keys(`${f.te.redis.prefix}*idem*`)).not.toHaveLength(0);
    for (const value of await redisStrings()) expect(value).not.toContain(secret);

    const retry = await create();
    expect(retry.status).toBe(409);
    expect(retry.body).toMatchObject({ type: '/problems/idempotent-response-not-replayable', originalStatus: 201 });
    expect(retry.text).not.toContain(secret);
    const list = await f.call('GET', '/api/oauth/clients', { token: admin.idToken, tenant: admin.tenantId });
    expect(list.body.filter((c: { name: string }) => c.name === 'once')).toHaveLength(1);

    const rotateKey = randomUUID();
    const rotate = () =>
      f.call('POST', `/api/oauth/clients/${created.body.clientId}/rotate-secret`, { token: admin.idToken, tenant: admin.tenantId, headers: { 'idempotency-key': rotateKey } });
    const rotated = await rotate();
    expect(rotated.status).toBe(200);
    for (const value of await redisStrings()) expect(value).not.toContain(rotated.body.clientSecret);
    const again = await rotate();
    expect([again.status, again.body.type]).toEqual([409, '/problems/idempotent-response-not-replayable']);
    expect(again.text).not.toContain(rotated.body.clientSecret);
    // The secret from the first rotation still works: the retry rotated nothing.
    expect((await postToken({ authorization: basic(created.body.clientId, rotated.body.clientSecret) })).status).toBe(200);
  });

  it('a key reused with another X-Environment is another request (422), not the production answer replayed', async () => {
    const flag = await f.call('POST', '/api/flags', { token: admin.idToken, tenant: admin.tenantId, json: { key: 'idem-env', name: 'e', type: 'boolean', defaultValue: false } });
    expect(flag.status).toBe(201);
    const key = randomUUID();
    const patch = (environment: string) =>
      f.call('PATCH', '/api/flags/idem-env', { token: admin.idToken, tenant: admin.tenantId, json: { enabled: true }, headers: { 'idempotency-key': key, 'x-environment': environment } });
    const production = await patch('production');
    expect([production.status, production.body.environment]).toEqual([200, 'production']);
    const staging = await patch('staging');
    expect([staging.status, staging.body.type]).toEqual([422, '/problems/idempotency-key-reused']);
    const again = await patch('production');
    expect([again.status, again.headers.get('idempotent-replayed')]).toEqual([200, 'true']);
  });
});
