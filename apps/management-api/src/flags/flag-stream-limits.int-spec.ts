/**
 * What one person or one network may hold of a process's flag-data streams, across tenants, and
 * who gives way when the process is full (real HTTP, Postgres, Redis). The API trusts one proxy
 * here (TRUST_PROXY=1), so each request names its client address in X-Forwarded-For.
 */
import { FlagStreamClient, type OpenStream } from '../testing/flag-stream.fixture';
import { ManagementApiFixture, type SignedUp } from '../testing/management-api.fixture';
import { FlagStreams } from './flag-streams';

describe('flag-data stream bounds across tenants (real HTTP, Postgres, Redis)', () => {
  let f: ManagementApiFixture;
  const streams = new FlagStreamClient(() => f.url);

  beforeAll(async () => {
    f = await ManagementApiFixture.start({
      TRUST_PROXY: '1',
      FLAG_STREAMS_PER_TENANT_FREE: '2',
      FLAG_STREAMS_PER_TENANT_STANDARD: '3',
      FLAG_STREAMS_PER_USER: '3',
      FLAG_STREAMS_PER_ADDRESS: '4',
      FLAG_STREAMS_PER_PROCESS: '6',
    });
  }, 60_000);
  afterEach(async () => {
    streams.closeAll();
    // Closed streams are released once the server sees them go.
    const held = f.svc.app.get(FlagStreams);
    for (let i = 0; i < 100 && held.held() > 0; i++) await new Promise((r) => setTimeout(r, 20));
  });
  afterAll(async () => {
    await f?.stop();
  });

  const headers = (u: SignedUp, address: string, tenantId = u.tenantId) => ({ authorization: `Bearer ${u.idToken}`, 'x-tenant-id': tenantId, 'x-forwarded-for': address });
  const open = async (u: SignedUp, address: string, tenantId?: string): Promise<OpenStream> => {
    const o = await streams.open(headers(u, address, tenantId));
    expect([o.status, o.problem]).toEqual([200, undefined]);
    expect((await o.stream!.next()).event).toBe('put');
    return o.stream!;
  };
  const refused = async (u: SignedUp, address: string, tenantId?: string) => {
    const o = await streams.open(headers(u, address, tenantId));
    return [o.status, o.problem?.type, o.problem?.per ?? null];
  };

  it('bounds one person across all their tenants: new tenants do not bring new streams', async () => {
    const eve = await f.signUp();
    const second = await f.call('POST', '/api/tenants', { token: eve.idToken, json: { name: 'second', primaryEmail: eve.email } });
    expect(second.status).toBe(201);
    const secondId = second.body.id as string;
    await open(eve, '198.51.100.1');
    await open(eve, '198.51.100.1');
    expect(await refused(eve, '198.51.100.1')).toEqual([429, '/problems/too-many-flag-streams', 'tenant']);
    // Her second (free) tenant has its own allowance, but she has reached hers.
    await open(eve, '198.51.100.1', secondId);
    expect(await refused(eve, '198.51.100.2', secondId)).toEqual([429, '/problems/too-many-flag-streams', 'user']);
    // Someone else is not held back by her.
    await open(await f.signUp(), '198.51.100.9');
  });

  it('bounds one network across tenants and people, an IPv6 /64 counting as one address', async () => {
    const people = await Promise.all([0, 1].map(() => f.signUp()));
    await open(people[0]!, '2001:db8:7:1::a');
    await open(people[0]!, '2001:db8:7:1::b');
    await open(people[1]!, '2001:db8:7:1:ffff:ffff:ffff:1');
    await open(people[1]!, '2001:db8:7:1::1:2');
    const third = await f.signUp();
    // Another address in the same /64: refused; one in the next /64: taken.
    expect(await refused(third, '2001:db8:7:1::c')).toEqual([429, '/problems/too-many-flag-streams', 'address']);
    await open(third, '2001:db8:7:2::c');
  });

  it('when full, refuses a free-plan stream and takes a paid-plan one in place of the newest free-plan stream', async () => {
    const free = await Promise.all([0, 1, 2].map(() => f.signUp()));
    const held: OpenStream[] = [];
    for (const [i, u] of free.entries()) {
      held.push(await open(u, `203.0.113.${i + 1}`));
      held.push(await open(u, `203.0.113.${i + 1}`));
    }
    expect(await refused(await f.signUp(), '203.0.113.50')).toEqual([503, '/problems/flag-streams-full', null]);
    const paying = await f.signUp();
    await f.sql(`UPDATE tenants SET plan = 'standard' WHERE id = $1`, [paying.tenantId]);
    const paid = await open(paying, '203.0.113.60');
    // The newest free-plan stream ended, told why; every other one goes on.
    const newest = held[5]!;
    await newest.whenEnded(5000);
    expect(newest.events.filter((e) => e.event === 'end').map((e) => e.data.reason)).toEqual(['shed']);
    expect(held.slice(0, 5).map((s) => s.ended)).toEqual([false, false, false, false, false]);
    // The shed client's reconnect is refused while the process is full; the next paid one sheds the next newest.
    expect(await refused(free[2]!, '203.0.113.3')).toEqual([503, '/problems/flag-streams-full', null]);
    await open(paying, '203.0.113.60');
    await held[4]!.whenEnded(5000);
    expect(held.slice(0, 4).map((s) => s.ended)).toEqual([false, false, false, false]);
    expect(paid.ended).toBe(false);
  });
});
