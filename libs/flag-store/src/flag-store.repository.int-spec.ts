import { Client } from 'pg';
import type { DataSource } from 'typeorm';
import { flagDefinitionBytes } from '@flagship/flag-evaluation';
import { createDataSource, measureFlagDefinitions } from '@flagship/persistence';
import { createTestDatabase, numberFlag, type TestDatabase, writeNumberFlag } from '@flagship/testing';
import { type FlagStoreReads, FlagStoreRepository } from './flag-store.repository';
import { FakeFlagStoreRepository } from './flag-store.repository.fake';

const A = '5a1e0c3a-1b7e-4c1e-9a51-2d9f4c1e0b01';
const B = '5a1e0c3a-1b7e-4c1e-9a51-2d9f4c1e0b02';
const E = 'production';

/** A repository with a way to write what it reads: number flags, as management-api writes them. */
interface Subject {
  reads: FlagStoreReads;
  write(tenantId: string, key: string, value: number, environment?: string): Promise<void>;
  remove(tenantId: string, key: string): Promise<void>;
  /** A segment written (created, or its next version), as management-api writes it. */
  writeSegment(tenantId: string, key: string, included: string[], environment?: string): Promise<void>;
  removeSegment(tenantId: string, key: string): Promise<void>;
}

const segment = (key: string, included: string[]) => ({ key, name: key, included, excluded: [], includedContexts: [], excludedContexts: [], rules: [] });

let db: TestDatabase;
let sql: Client;
let ds: DataSource;

const postgres = async (): Promise<Subject> => {
  await sql.query('TRUNCATE flags, segments CASCADE');
  return {
    reads: new FlagStoreRepository(ds),
    write: async (tenantId, key, value, environment = E) => {
      await writeNumberFlag(sql, tenantId, key, value, environment);
      await measureFlagDefinitions({ query: async (text, params) => (await sql.query(text, params)).rows }, tenantId, { environment });
    },
    remove: async (tenantId, key) => void (await sql.query('DELETE FROM flags WHERE tenant_id = $1 AND key = $2', [tenantId, key])),
    writeSegment: async (tenantId, key, included, environment = E) => {
      const { key: _k, name: _n, ...definition } = segment(key, included);
      await sql.query(
        `INSERT INTO segments (tenant_id, environment_key, key, name, definition) VALUES ($1, $2, $3, $3, $4::jsonb)
         ON CONFLICT (tenant_id, environment_key, key) DO UPDATE SET definition = excluded.definition, version = segments.version + 1`,
        [tenantId, environment, key, JSON.stringify(definition)],
      );
    },
    removeSegment: async (tenantId, key) => void (await sql.query('DELETE FROM segments WHERE tenant_id = $1 AND key = $2', [tenantId, key])),
  };
};

const fake = async (): Promise<Subject> => {
  const repo = new FakeFlagStoreRepository();
  return {
    reads: repo,
    write: async (tenantId, key, value, environment = E) => repo.put(tenantId, environment, numberFlag(key, value)),
    remove: async (tenantId, key) => {
      for (const environment of [E, 'staging']) repo.remove(tenantId, environment, key);
    },
    writeSegment: async (tenantId, key, included, environment = E) => repo.putSegment(tenantId, environment, segment(key, included)),
    removeSegment: async (tenantId, key) => {
      for (const environment of [E, 'staging']) repo.removeSegment(tenantId, environment, key);
    },
  };
};

beforeAll(async () => {
  db = await createTestDatabase();
  sql = new Client({ connectionString: db.url });
  await sql.connect();
  for (const id of [A, B]) {
    await sql.query(`INSERT INTO tenants (id, name, primary_email) VALUES ($1, 'Tenant', 'owner@example.com')`, [id]);
    await sql.query(`INSERT INTO environments (tenant_id, key, name) VALUES ($1, 'production', 'Production'), ($1, 'staging', 'Staging')`, [id]);
  }
  ds = createDataSource({ url: db.url, poolSize: 2 });
  await ds.initialize();
});

afterAll(async () => {
  await ds?.destroy();
  await sql?.end();
  await db?.drop();
});

/** The same cases over Postgres and over the fake the store's unit specs use: the fake reads as the real one does. */
describe.each([
  ['Postgres', postgres],
  ['the fake', fake],
])('the flag store\'s reads over %s', (_name, make) => {
  let s: Subject;
  beforeEach(async () => {
    s = await make();
  });

  it("reads a tenant-environment's flags in the evaluator's form, and no other tenant's or environment's", async () => {
    await s.write(A, 'a1', 1);
    await s.write(A, 'a2', 2);
    await s.write(A, 'staged', 3, 'staging');
    await s.write(B, 'b1', 4);
    const all = await s.reads.findAll(A, E);
    expect(all.map((f) => [f.key, f.projectId, f.definition.defaultValue, f.definition.enabled]).sort()).toEqual([
      ['a1', null, 1, true],
      ['a2', null, 2, true],
    ]);
    expect(all.find((f) => f.key === 'a1')!.definition).toMatchObject({ ...numberFlag('a1', 1), version: expect.any(Number) });
    expect((await s.reads.findAll(B, 'staging')).map((f) => f.key)).toEqual([]);
  });

  it('reads the named flags that exist; a missing key, or another tenant\'s, is not there', async () => {
    await s.write(A, 'k1', 1);
    await s.write(A, 'k2', 1);
    await s.write(B, 'theirs', 1);
    expect((await s.reads.findByKeys(A, E, ['k2', 'gone', 'theirs'])).map((f) => f.key)).toEqual(['k2']);
    await s.remove(A, 'k2');
    expect(await s.reads.findByKeys(A, E, ['k2'])).toEqual([]);
  });

  it('tells a fingerprint per flag that changes when the flag is written, and only then', async () => {
    await s.write(A, 'f1', 1);
    await s.write(A, 'f2', 1);
    const before = await s.reads.fingerprints(A, E);
    expect([...before.keys()].sort()).toEqual(['f1', 'f2']);
    await s.write(A, 'f2', 5);
    const after = await s.reads.fingerprints(A, E);
    expect(after.get('f1')).toBe(before.get('f1'));
    expect(after.get('f2')).not.toBe(before.get('f2'));
    expect(after.get('f2')).toBe((await s.reads.findByKeys(A, E, ['f2']))[0]!.fingerprint);
  });

  it('sums what the flags take as written (flagDefinitionBytes), without reading them', async () => {
    await s.write(A, 's1', 1);
    await s.write(A, 's2', 123456);
    await s.write(B, 's3', 1);
    const expected = (await s.reads.findAll(A, E)).reduce((n, f) => n + flagDefinitionBytes(f.definition), 0);
    expect(await s.reads.storedBytes(A, E)).toBe(expected);
    expect(await s.reads.storedBytes(A, 'staging')).toBe(0);
  });

  it("reads a tenant-environment's segments in the evaluator's form, all or by key, and no other tenant's or environment's", async () => {
    await s.writeSegment(A, 'alpha', ['u1']);
    await s.writeSegment(A, 'Zeta', []);
    await s.writeSegment(A, 'staged', [], 'staging');
    await s.writeSegment(B, 'theirs', []);
    const all = await s.reads.findSegments(A, E);
    expect(all.map((x) => x.definition).sort((a, b) => (a.key < b.key ? -1 : 1))).toEqual([
      { ...segment('Zeta', []), version: expect.any(Number) },
      { ...segment('alpha', ['u1']), version: expect.any(Number) },
    ]);
    expect((await s.reads.findSegmentsByKeys(A, E, ['alpha', 'gone', 'theirs', 'staged'])).map((x) => x.key)).toEqual(['alpha']);
    expect(await s.reads.findSegmentsByKeys(A, E, [])).toEqual([]);
    expect(await s.reads.findSegments(B, 'staging')).toEqual([]);
  });

  it('tells a fingerprint per segment that changes when it is written, and only then; a deleted one is gone', async () => {
    await s.writeSegment(A, 'one', []);
    await s.writeSegment(A, 'two', []);
    const before = await s.reads.segmentFingerprints(A, E);
    expect([...before.keys()].sort()).toEqual(['one', 'two']);
    await s.writeSegment(A, 'two', ['x']);
    await s.writeSegment(B, 'one', ['theirs']);
    const after = await s.reads.segmentFingerprints(A, E);
    expect(after.get('one')).toBe(before.get('one'));
    expect(after.get('two')).not.toBe(before.get('two'));
    expect(after.get('two')).toBe((await s.reads.findSegmentsByKeys(A, E, ['two']))[0]!.fingerprint);
    await s.removeSegment(A, 'one');
    expect([...(await s.reads.segmentFingerprints(A, E)).keys()]).toEqual(['two']);
  });
});
