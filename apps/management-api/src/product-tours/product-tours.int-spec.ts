import { ManagementApiFixture, type SignedUp } from '../testing/management-api.fixture';

describe('product tours (real HTTP, Postgres, Redis)', () => {
  let f: ManagementApiFixture;
  let ann: SignedUp;
  let ben: SignedUp;

  beforeAll(async () => {
    f = await ManagementApiFixture.start();
    ann = await f.signUp();
    ben = await f.signUp();
  });
  afterAll(async () => {
    await f?.stop();
  });

  it('starts a tour not completed, completes it once, and can reset it', async () => {
    const fresh = await f.call('GET', `/v1/users/${ann.userId}/product-tours/onboarding`, { token: ann.idToken });
    expect(fresh.status).toBe(200);
    expect(fresh.body).toEqual({ completed: false, completed_at: null, created_at: expect.any(String), updated_at: expect.any(String) });
    const done = await f.call('PUT', `/v1/users/me/product-tours/onboarding`, { token: ann.idToken, json: { completed: true } });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ completed: true, completed_at: expect.any(String), created_at: fresh.body.created_at });
    const doneAgain = await f.call('PUT', `/v1/users/me/product-tours/onboarding`, { token: ann.idToken, json: { completed: true } });
    expect(doneAgain.body.completed_at).toBe(done.body.completed_at);
    const read = await f.call('GET', `/v1/users/me/product-tours/onboarding`, { token: ann.idToken });
    expect(read.body).toEqual(doneAgain.body);
    const reset = await f.call('PUT', `/v1/users/me/product-tours/onboarding`, { token: ann.idToken, json: { completed: false } });
    expect(reset.body).toMatchObject({ completed: false, completed_at: null });
  });

  it('nobody reads or writes another user\'s tours', async () => {
    const read = await f.call('GET', `/v1/users/${ann.userId}/product-tours/onboarding`, { token: ben.idToken });
    expect(read.status).toBe(403);
    const write = await f.call('PUT', `/v1/users/${ann.userId}/product-tours/onboarding`, { token: ben.idToken, json: { completed: true } });
    expect(write.status).toBe(403);
    const own = await f.call('GET', `/v1/users/me/product-tours/onboarding`, { token: ben.idToken });
    expect(own.body.completed).toBe(false);
    expect((await f.call('GET', `/v1/users/me/product-tours/onboarding`, { token: ben.idToken, tenant: ann.tenantId })).status).toBe(403);
    expect((await f.call('GET', `/v1/users/me/product-tours/onboarding`)).status).toBe(401);
  });

  it('validates the tour key and the body', async () => {
    expect((await f.call('GET', `/v1/users/me/product-tours/${'x'.repeat(200)}`, { token: ann.idToken })).status).toBe(422);
    const wrongType = await f.call('PUT', `/v1/users/me/product-tours/intro`, { token: ann.idToken, json: { completed: 'yes' } });
    expect([wrongType.status, Object.keys(wrongType.body.errors)]).toEqual([422, ['completed']]);
    const missing = await f.call('PUT', `/v1/users/me/product-tours/intro`, { token: ann.idToken, json: {} });
    expect(missing.status).toBe(422);
    const extra = await f.call('PUT', `/v1/users/me/product-tours/intro`, { token: ann.idToken, json: { completed: true, at: 1 } });
    expect(extra.status).toBe(422);
  });
});
