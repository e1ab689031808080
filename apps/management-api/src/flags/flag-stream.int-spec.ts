import { connect, type Socket } from 'node:net';
import { http } from '@flagship/testing';
import { FlagStreamClient } from '../testing/flag-stream.fixture';
import { ManagementApiFixture, type SignedUp } from '../testing/management-api.fixture';
import { FlagStreams } from './flag-streams';

describe('flag-data stream GET /api/flag-stream (real HTTP, Postgres, Redis)', () => {
  let f: ManagementApiFixture;
  let owner: SignedUp;
  let other: SignedUp;

  beforeAll(async () => {
    // FLAG_MAX_BYTES raised: the slow-consumer test streams a flag of about 500 KB.
    f = await ManagementApiFixture.start({
      FLAG_STREAMS_PER_TENANT_FREE: '3',
      FLAG_STREAMS_PER_PROCESS: '5',
      FLAG_STREAM_MAX_BUFFER_BYTES: String(256 * 1024),
      FLAG_MAX_BYTES: String(1024 * 1024),
    });
    owner = await f.signUp();
    other = await f.signUp();
  });
  afterEach(() => streams.closeAll());
  afterAll(async () => {
    await f?.stop();
  });

  const as = (u: SignedUp) => ({ token: u.idToken, tenant: u.tenantId });

  const streams = new FlagStreamClient(() => f.url);
  const open = (headers: Record<string, string>, query = '') => streams.open(headers, query);
  const userHeaders = (u: SignedUp, extra: Record<string, string> = {}) => ({ authorization: `Bearer ${u.idToken}`, 'x-tenant-id': u.tenantId, ...extra });

  async function clientToken(scopes: string[]): Promise<string> {
    const client = (await f.call('POST', '/api/oauth/clients', { ...as(owner), json: { name: `stream ${scopes.join(' ')} ${Math.random()}`, scopes } })).body;
    const res = await http(`${f.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret }).toString(),
    });
    return (res.body as { access_token: string }).access_token;
  }

  const patch = (key: string, json: unknown, env = 'production') => f.call('PATCH', `/api/flags/${key}`, { ...as(owner), headers: { 'x-environment': env }, json });

  it('sends a put of the environment\'s flags in the evaluator\'s form, then patch and delete as changes land', async () => {
    for (const key of ['alpha', 'beta', 'gamma']) {
      expect((await f.call('POST', '/api/flags', { ...as(owner), json: { key, name: key, type: 'boolean', defaultValue: false } })).status).toBe(201);
    }
    const { stream } = await open(userHeaders(owner));
    const put = await stream!.next();
    expect(put.event).toBe('put');
    const exported = (await f.call('GET', '/api/flags/export?environment=production', as(owner))).body.flags;
    const byKey = (a: { key: string }, b: { key: string }) => a.key.localeCompare(b.key);
    expect([...put.data.flags].sort(byKey)).toEqual([...exported].sort(byKey));

    expect((await patch('beta', { enabled: true })).status).toBe(200);
    const changed = await stream!.next();
    expect(changed.event).toBe('patch');
    expect(changed.data.flags.map((d: { key: string; enabled: boolean }) => [d.key, d.enabled])).toEqual([['beta', true]]);

    expect((await f.call('DELETE', '/api/flags/gamma', as(owner))).status).toBe(204);
    const deleted = await stream!.next();
    expect([deleted.event, deleted.data]).toEqual(['delete', { keys: ['gamma'] }]);
    const seq = (id: string | undefined) => Number(id!.split(':')[1]);
    expect(seq(deleted.id)).toBeGreaterThan(seq(changed.id));
    expect(seq(changed.id)).toBeGreaterThan(seq(put.id));

    // Another environment's change is not this stream's.
    expect((await patch('alpha', { enabled: true }, 'staging')).status).toBe(200);
    expect((await patch('alpha', { enabled: true })).status).toBe(200);
    const next = await stream!.next();
    expect(next.data.flags.map((d: { key: string; enabled: boolean }) => [d.key, d.enabled])).toEqual([['alpha', true]]);
  });

  it('resumes from Last-Event-ID with only what changed since; an id it cannot place gets a fresh put', async () => {
    const first = await open(userHeaders(owner, { 'x-environment': 'staging' }));
    const put = await first.stream!.next();
    expect(put.event).toBe('put');
    first.stream!.close();
    expect((await patch('beta', { enabled: true }, 'staging')).status).toBe(200);
    expect((await patch('beta', { enabled: false }, 'staging')).status).toBe(200);

    const resumed = await open(userHeaders(owner, { 'last-event-id': put.id! }), '?environment=staging');
    // The two changes may come as one patch (bursts are coalesced) or two; never as a put.
    let last = await resumed.stream!.next();
    const replayed = [last.event];
    while (last.data.flags?.[0]?.enabled !== false) {
      last = await resumed.stream!.next();
      replayed.push(last.event);
    }
    expect(replayed.every((e) => e === 'patch')).toBe(true);
    expect(last.data.flags.map((d: { key: string; enabled: boolean }) => [d.key, d.enabled])).toEqual([['beta', false]]);
    resumed.stream!.close();

    // Already current: nothing replayed, no put.
    const current = await open(userHeaders(owner, { 'x-environment': 'staging', 'last-event-id': last.id! }));
    await new Promise((r) => setTimeout(r, 300));
    expect(current.stream!.events).toEqual([]);
    current.stream!.close();

    for (const id of ['someone-else:1', 'garbage', `${put.id!.split(':')[0]}:999999`]) {
      const fresh = await open(userHeaders(owner, { 'x-environment': 'staging', 'last-event-id': id }));
      expect((await fresh.stream!.next()).event).toBe('put');
      fresh.stream!.close();
    }
  });

  it('takes the auth of GET /api/flags: 401 without a token, 403 for a client without flags:read, 404 for an unknown environment', async () => {
    expect((await open({})).status).toBe(401);
    const evaluator = await clientToken(['flags:evaluate']);
    const refused = await open({ authorization: `Bearer ${evaluator}` });
    expect(refused.status).toBe(403);
    const reader = await clientToken(['flags:read']);
    const allowed = await open({ authorization: `Bearer ${reader}` });
    expect(allowed.status).toBe(200);
    expect((await allowed.stream!.next()).event).toBe('put');
    allowed.stream!.close();
    expect((await open(userHeaders(owner), '?environment=nowhere')).status).toBe(404);
    // Another tenant's member sees their own (empty) environment, never this one's flags.
    const theirs = await open(userHeaders(other));
    expect((await theirs.stream!.next()).data).toEqual({ flags: [], segments: [] });
    theirs.stream!.close();
    // Users name their tenant, as on GET /api/flags.
    expect((await open({ authorization: `Bearer ${owner.idToken}` })).status).toBe(400);
  });

  it('bounds streams per tenant by its plan\'s allowance (429) and per process (503 with Retry-After)', async () => {
    // Streams closed by earlier tests are released once the server sees them go.
    await new Promise((r) => setTimeout(r, 200));
    const mine = await Promise.all([0, 1, 2].map(() => open(userHeaders(owner))));
    expect(mine.map((o) => o.status)).toEqual([200, 200, 200]);
    const fourth = await open(userHeaders(owner));
    expect([fourth.status, fourth.problem?.type, fourth.problem?.limit, fourth.problem?.per]).toEqual([429, '/problems/too-many-flag-streams', 3, 'tenant']);
    expect(Number(fourth.retryAfter)).toBeGreaterThan(0);
    const theirs = await Promise.all([0, 1].map(() => open(userHeaders(other))));
    expect(theirs.map((o) => o.status)).toEqual([200, 200]);
    const full = await open(userHeaders(other));
    expect([full.status, full.problem?.type]).toEqual([503, '/problems/flag-streams-full']);
    expect(Number(full.retryAfter)).toBeGreaterThan(0);
    // A closed stream frees its place.
    mine[0]!.stream!.close();
    await new Promise((r) => setTimeout(r, 200));
    expect((await open(userHeaders(other))).status).toBe(200);
  });

  it('closes a consumer that leaves more than FLAG_STREAM_MAX_BUFFER_BYTES unread instead of buffering for it', async () => {
    // The bounds test's streams are released once the server sees them go.
    await new Promise((r) => setTimeout(r, 500));
    // A flag of about 500 KB: every patch event carries it whole.
    const values = Array.from({ length: 30_000 }, (_, i) => `user-${String(i).padStart(10, '0')}`);
    const created = await f.call('POST', '/api/flags', { ...as(owner), json: { key: 'heavy', name: 'heavy', type: 'boolean', defaultValue: false } });
    expect(created.status).toBe(201);
    const variationId = created.body.variations[0].id;
    expect((await patch('heavy', { targets: [{ variationId, values }] })).status).toBe(200);
    const request = `GET /api/flag-stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${owner.idToken}\r\nX-Tenant-ID: ${owner.tenantId}\r\nAccept: text/event-stream\r\n\r\n`;
    // A client that never reads, not even its put.
    const never: Socket = connect(Number(new URL(f.url).port), '127.0.0.1');
    let neverClosed = false;
    let neverReceived = 0;
    never.pause();
    never.on('close', () => (neverClosed = true));
    never.on('error', () => undefined);
    await new Promise((r) => never.once('connect', r));
    never.write(request);

    // A client that reads its put, then stops reading.
    const socket: Socket = connect(Number(new URL(f.url).port), '127.0.0.1');
    let received = 0;
    let closed = false;
    socket.on('data', (c: Buffer) => (received += c.length));
    socket.on('close', () => (closed = true));
    socket.on('error', () => undefined);
    await new Promise((r) => socket.once('connect', r));
    socket.write(request);
    let head = '';
    socket.once('data', (c: Buffer) => (head = c.toString('latin1', 0, 12)));
    await new Promise((r) => setTimeout(r, 300));
    expect(head).toBe('HTTP/1.1 200');
    socket.pause();

    // Every event carries the flag whole: at least its target list's JSON. Counted from it, not as a
    // round 500 KB (an event is ~570 KB, so a client that got all of 13 events outran the estimate).
    const eventBytes = Buffer.byteLength(JSON.stringify(values));
    let sent = eventBytes; // the put
    // Both are let go by the server while they still read nothing: it holds no stream of the tenant.
    const held = f.svc.app.get(FlagStreams);
    expect(held.streamsOf(owner.tenantId)).toBe(2);
    for (let i = 0; i < 30 && held.streamsOf(owner.tenantId) > 0; i++) {
      expect((await patch('heavy', { enabled: i % 2 === 0 })).status).toBe(200);
      sent += eventBytes;
      await new Promise((r) => setTimeout(r, 60));
    }
    expect(held.streamsOf(owner.tenantId)).toBe(0);
    // The server's close reaches each client after what the kernel already holds for it.
    socket.resume();
    never.on('data', (c: Buffer) => (neverReceived += c.length));
    never.resume();
    const deadline = Date.now() + 10_000;
    while (!(closed && neverClosed) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(closed).toBe(true);
    expect(received).toBeLessThan(sent);
    expect(neverClosed).toBe(true);
    expect(neverReceived).toBeLessThan(sent);
  }, 60_000);
});
