import { Client } from 'pg';
import type { DataSource } from 'typeorm';
import type Redis from 'ioredis';
import { createDataSource, measureFlagDefinitions } from '@flagship/persistence';
import { CHANNELS, createRedis, type FlagChanged, type PubSub, RedisKeys, RedisPubSub } from '@flagship/redis';
import { createTestDatabase, createTestRedisPrefix, TcpProxy, type TestDatabase, type TestRedisPrefix, waitFor, writeNumberFlag, writeSegment, writeSegmentGatedFlag } from '@flagship/testing';
import { type FlagSetChanged, FlagSetTooLargeError, FlagStore, type FlagStoreOptions } from './flag-store';
import { FlagStoreRepository, type StoredFlag } from './flag-store.repository';

const A = '5a1e0c3a-1b7e-4c1e-9a51-2d9f4c1e0a01';
const B = '5a1e0c3a-1b7e-4c1e-9a51-2d9f4c1e0a02';

/** The real repository, recording what each read asked for. */
class RecordingRepository extends FlagStoreRepository {
  readonly reads: string[] = [];

  override findAll(tenantId: string, environment: string): Promise<StoredFlag[]> {
    this.reads.push(`all ${tenantId}/${environment}`);
    return super.findAll(tenantId, environment);
  }

  override findByKeys(tenantId: string, environment: string, keys: readonly string[]): Promise<StoredFlag[]> {
    this.reads.push(`keys ${tenantId}/${environment} ${[...keys].sort().join(',')}`);
    return super.findByKeys(tenantId, environment, keys);
  }

  override fingerprints(tenantId: string, environment: string): Promise<Map<string, string>> {
    this.reads.push(`fingerprints ${tenantId}/${environment}`);
    return super.fingerprints(tenantId, environment);
  }

  override storedBytes(tenantId: string, environment: string): Promise<number> {
    this.reads.push(`bytes ${tenantId}/${environment}`);
    return super.storedBytes(tenantId, environment);
  }
}

jest.setTimeout(30000);

/**
 * What only Postgres and Redis can break: announcements over Redis, the repository's SQL
 * (fingerprints that see a project deleted, definition_bytes, tenant ids in every WHERE), a
 * connection cut. The store's rules (invalidate, whole and cross-environment announcements, bounds,
 * holds, rows) are proven over FakePubSub and the fake repository in flag-store.spec.ts.
 */
describe('FlagStore over real Postgres and Redis', () => {
  let db: TestDatabase;
  let rp: TestRedisPrefix;
  let proxy: TcpProxy;
  let sql: Client;
  let ds: DataSource;
  let publisher: Redis;
  let pubsub: PubSub;
  const stores: FlagStore[] = [];
  const toldBeforeServed: FlagSetChanged[] = [];

  const setFlag = (tenant: string, key: string, value: number, environment = 'production'): Promise<void> => writeNumberFlag(sql, tenant, key, value, environment);
  const publish = (m: FlagChanged) => pubsub.publish(CHANNELS.flagChanged, m);
  const valueIn = (store: FlagStore, tenant: string, key: string, environment = 'production'): unknown => {
    const view = store.peek(tenant, environment, { stale: true });
    const flag = view?.set.get(key);
    return flag === undefined ? 'missing' : view!.set.evaluate(flag, { key: 'u1' }).value;
  };

  const open = async (options: Partial<FlagStoreOptions> = {}) => {
    const repository = new RecordingRepository(ds);
    const store = new FlagStore(repository, pubsub, { reconcileMs: 60_000, maxEntries: 100, maxRetryMs: 200, ...options }).start();
    stores.push(store);
    const changes: FlagSetChanged[] = [];
    store.onChange((c) => {
      // Listeners run synchronously after the change is applied: what they read is the changed set
      // (stale: true, as a later announcement may already be pending).
      if (store.peek(c.tenantId, c.environment, { stale: true })?.set.updatedAt !== c.at) toldBeforeServed.push(c);
      changes.push(c);
    });
    await waitFor(async () => store.status(A, 'production').subscriber === 'ready');
    return { store, repository, changes };
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    rp = createTestRedisPrefix();
    proxy = await TcpProxy.start(db.url);
    sql = new Client({ connectionString: db.url });
    await sql.connect();
    for (const id of [A, B]) {
      await sql.query(`INSERT INTO tenants (id, name, primary_email) VALUES ($1, 'Tenant', 'owner@example.com')`, [id]);
      await sql.query(`INSERT INTO environments (tenant_id, key, name) VALUES ($1, 'production', 'Production'), ($1, 'staging', 'Staging')`, [id]);
    }
    ds = createDataSource({ url: proxy.rewrite(db.url), poolSize: 2, queryTimeoutMs: 2000 });
    await ds.initialize();
    publisher = createRedis({ url: rp.url, name: 'flag-store-test' });
    pubsub = new RedisPubSub(publisher, new RedisKeys(rp.prefix), rp.url, 'flag-store-test');
  });

  afterEach(() => {
    for (const s of stores.splice(0)) s.close();
    expect(toldBeforeServed.splice(0)).toEqual([]);
  });

  afterAll(async () => {
    await pubsub?.close();
    publisher?.disconnect();
    await ds?.destroy().catch(() => undefined);
    await sql?.end();
    await proxy?.stop();
    await rp?.cleanup();
    await db?.drop();
  });

  it('an announced change re-reads that flag alone, at once, and listeners hear its key', async () => {
    for (const key of ['a1', 'a2', 'a3']) await setFlag(A, key, 1);
    const { store, repository, changes } = await open();
    const view = await store.view(A, 'production');
    expect([...view.set.keys()].sort()).toEqual(['a1', 'a2', 'a3']);
    const compiled = new Map([...view.set.keys()].map((k) => [k, view.set.get(k)]));
    expect(changes).toEqual([{ tenantId: A, environment: 'production', keys: undefined, flags: [], removed: [], at: view.set.updatedAt }]);

    await setFlag(A, 'a2', 2);
    await publish({ tenantId: A, environment: 'production', flagKey: 'a2', version: 2 });
    // No read needed: the store re-reads at once (push streams listen).
    await waitFor(async () => changes.length === 2);
    expect(changes[1]).toMatchObject({ tenantId: A, environment: 'production', keys: ['a2'], removed: [] });
    // The row as read rides along, so a listener (the flag-data stream) needs no read of its own.
    expect(changes[1]!.flags.map((f) => [f.key, f.definition.defaultValue])).toEqual([['a2', 2]]);
    expect(valueIn(store, A, 'a2')).toBe(2);
    expect(repository.reads).toEqual([`all ${A}/production`, `keys ${A}/production a2`]);
    // The same set, changed in place: the other flags stay compiled.
    expect(store.peek(A, 'production')!.set === view.set).toBe(true);
    expect(['a1', 'a3'].every((k) => view.set.get(k) === compiled.get(k))).toBe(true);
    expect(view.set.get('a2') === compiled.get('a2')).toBe(false);

    // A repeated announcement reads again but changes nothing, and nobody is told.
    await publish({ tenantId: A, environment: 'production', flagKey: 'a2', version: 2 });
    await waitFor(async () => repository.reads.length === 3);
    expect(changes).toHaveLength(2);

    // A deleted flag is gone once announced.
    await sql.query(`DELETE FROM flags WHERE tenant_id = $1 AND key = 'a3'`, [A]);
    await publish({ tenantId: A, environment: 'production', flagKey: 'a3', version: 0 });
    await waitFor(async () => changes.length === 3);
    expect(changes[2]).toMatchObject({ keys: ['a3'], flags: [], removed: ['a3'] });
    expect(valueIn(store, A, 'a3')).toBe('missing');
  });

  it('segments stored in Postgres resolve segmentMatch; an announced segment change alone moves the set and its answers', async () => {
    await writeSegmentGatedFlag(sql, A, 'gated', 'beta', 1, 2);
    await writeSegment(sql, A, 'beta', ['u1']);
    const { store, changes } = await open();
    const view = await store.view(A, 'production');
    expect(valueIn(store, A, 'gated')).toBe(2);
    const loadedAt = view.set.updatedAt;

    await new Promise((r) => setTimeout(r, 5)); // `at` is in ms: let one pass
    await writeSegment(sql, A, 'beta', ['u2']);
    await publish({ tenantId: A, environment: 'production', segmentKey: 'beta', version: 2 });
    await waitFor(async () => changes.length === 2);
    expect(changes[1]).toMatchObject({ keys: [], segments: [expect.objectContaining({ key: 'beta' })] });
    expect(changes[1]!.at).toBeGreaterThan(loadedAt);
    expect(valueIn(store, A, 'gated')).toBe(1);
  });

  it('a lost announcement is healed by the periodic reconcile, which compares fingerprints and re-reads only what differs', async () => {
    await setFlag(A, 'r1', 1);
    await setFlag(A, 'r2', 1);
    const project = (await sql.query(`INSERT INTO projects (tenant_id, name) VALUES ($1, 'P') RETURNING id`, [A])).rows[0].id as string;
    await sql.query(`UPDATE flags SET project_id = $2, version = version + 1 WHERE tenant_id = $1 AND key = 'r1'`, [A, project]);
    const { store, repository, changes } = await open({ reconcileMs: 200 });
    await store.view(A, 'production');
    expect(store.peek(A, 'production')!.projects.get('r1')).toBe(project);
    repository.reads.length = 0;

    await setFlag(A, 'r2', 9); // no announcement at all
    // The held set is updated while the reconcile reads, its listeners told once it returns: wait for both.
    await waitFor(async () => valueIn(store, A, 'r2') === 9 && changes.at(-1)?.keys?.includes('r2') === true, 5000);
    expect(changes.at(-1)).toMatchObject({ keys: ['r2'] });
    expect(repository.reads.slice(0, 2)).toEqual([`fingerprints ${A}/production`, `keys ${A}/production r2`]);

    // Deleting a project moves no flag version; the fingerprint sees it all the same.
    await sql.query(`DELETE FROM projects WHERE id = $1`, [project]);
    await waitFor(async () => store.peek(A, 'production', { stale: true })!.projects.get('r1') === null && changes.at(-1)?.keys?.includes('r1') === true, 5000);
    expect(changes.at(-1)).toMatchObject({ keys: ['r1'] });
  });

  it('with Postgres down the last good set is served and says so; what was announced meanwhile is applied when Postgres returns', async () => {
    await setFlag(A, 'pg', 1);
    const { store, changes } = await open();
    await store.view(A, 'production');
    await proxy.cut();
    try {
      await setFlag(A, 'pg', 2);
      await publish({ tenantId: A, environment: 'production', flagKey: 'pg', version: 2 });
      await waitFor(async () => store.status(A, 'production').lastError !== undefined, 10_000);
      expect(store.status(A, 'production').lastError!.message).toMatch(/reading flags from Postgres failed/);
      // Readers that wait get the last good set, those that never wait too.
      const view = await store.view(A, 'production');
      expect(view.set.evaluate(view.set.get('pg')!, { key: 'u1' }).value).toBe(1);
      expect(valueIn(store, A, 'pg')).toBe(1);
    } finally {
      await proxy.restore();
    }
    await waitFor(async () => valueIn(store, A, 'pg') === 2, 10_000);
    expect(changes.at(-1)).toMatchObject({ keys: ['pg'] });
    await waitFor(async () => store.status(A, 'production').lastError === undefined, 5000);
  });

  it("tenants are isolated: a tenant's announcement never reads or touches another tenant's set", async () => {
    await setFlag(A, 'shared', 1);
    await setFlag(B, 'shared', 100);
    await setFlag(B, 'b-only', 5);
    const { store, repository, changes } = await open();
    await store.view(A, 'production');
    await store.view(B, 'production');
    expect([valueIn(store, A, 'shared'), valueIn(store, B, 'shared'), valueIn(store, A, 'b-only')]).toEqual([1, 100, 'missing']);
    const viewOfA = store.peek(A, 'production')!;
    const updatedA = viewOfA.set.updatedAt;
    repository.reads.length = 0;
    changes.length = 0;

    await setFlag(B, 'shared', 200);
    await publish({ tenantId: B, environment: 'production', flagKey: 'shared', version: 2 });
    await publish({ tenantId: B, flagKey: 'b-only' });
    await publish({ tenantId: B, environment: 'production' });
    await waitFor(async () => valueIn(store, B, 'shared') === 200);
    await waitFor(async () => repository.reads.includes(`all ${B}/production`));
    expect(repository.reads.every((r) => r.includes(B) && !r.includes(A))).toBe(true);
    expect(changes.every((c) => c.tenantId === B)).toBe(true);
    expect([valueIn(store, A, 'shared'), valueIn(store, A, 'b-only')]).toEqual([1, 'missing']);
    expect(viewOfA.set.updatedAt).toBe(updatedA);
    expect(store.peek(A, 'production')).toBe(viewOfA);
  });

  it('refuses a set whose stored sizes pass maxSetBytes without reading its flags, and holds it once it fits', async () => {
    const C = '5a1e0c3a-1b7e-4c1e-9a51-2d9f4c1e0a03';
    await sql.query(`INSERT INTO tenants (id, name, primary_email) VALUES ($1, 'Tenant', 'owner@example.com')`, [C]);
    await sql.query(`INSERT INTO environments (tenant_id, key, name) VALUES ($1, 'production', 'Production')`, [C]);
    for (const key of ['c1', 'c2', 'c3']) await setFlag(C, key, 1);
    const measured = await measureFlagDefinitions({ query: async (text, params) => (await sql.query(text, params)).rows }, C, { environment: 'production' });
    const total = measured.reduce((n, d) => n + d.bytes, 0);
    expect(total).toBeGreaterThan(0);

    const refusing = await open({ maxSetBytes: total - 1 });
    const refusal = await refusing.store.view(C, 'production').then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refusal).toBeInstanceOf(FlagSetTooLargeError);
    expect(refusal).toMatchObject({ bytes: total, limit: total - 1, read: false });
    expect(refusing.repository.reads).toEqual([`bytes ${C}/production`]);
    expect(refusing.store.size).toBe(0);

    const fitting = await open({ maxSetBytes: total });
    expect([...(await fitting.store.view(C, 'production')).set.keys()].sort()).toEqual(['c1', 'c2', 'c3']);
    expect(fitting.store.bytes).toBe(total);
  });
});
