import { flagDefinitionBytes, type FlagDefinition, type SegmentDefinition } from '@flagship/flag-evaluation';
import type { FlagStoreReads, StoredFlag, StoredSegment } from './flag-store.repository';

/**
 * In-memory twin of FlagStoreRepository for the store's unit specs: flags per tenant-environment,
 * each write a new fingerprint; `storedBytes` sums what the writes measured, as definition_bytes
 * does (`unmeasured` leaves a flag out of it, as a row written before the column was).
 */
export class FakeFlagStoreRepository implements FlagStoreReads {
  private readonly sets = new Map<string, Map<string, StoredFlag & { measured: number }>>();
  /** `t/e` -> key -> the segment, with the id its row would have. */
  private readonly segmentSets = new Map<string, Map<string, SegmentDefinition & { id: string; version: number }>>();
  private writes = 0;
  /** What each read asked for, in order: `all t/e`, `keys t/e a,b`, `fingerprints t/e`, `bytes t/e`. */
  readonly reads: string[] = [];
  /** While set, every read fails with it (Postgres away). */
  failing: Error | undefined;

  put(tenantId: string, environment: string, definition: FlagDefinition, opts: { unmeasured?: boolean; projectId?: string | null } = {}): void {
    const set = this.sets.get(`${tenantId}/${environment}`) ?? new Map<string, StoredFlag & { measured: number }>();
    this.sets.set(`${tenantId}/${environment}`, set);
    const projectId = opts.projectId === undefined ? (set.get(definition.key)?.projectId ?? null) : opts.projectId;
    const write = ++this.writes;
    // Every write has a greater version, as the flag's and its environment row's versions make it in Postgres.
    const versioned = { ...definition, version: definition.version ?? write };
    set.set(definition.key, { key: definition.key, projectId, fingerprint: `w${write}`, definition: versioned, measured: opts.unmeasured ? 0 : flagDefinitionBytes(versioned) });
  }

  /** A segment written (a new version each time), as management-api writes it. */
  putSegment(tenantId: string, environment: string, segment: SegmentDefinition): void {
    const set = this.segmentSets.get(`${tenantId}/${environment}`) ?? new Map<string, SegmentDefinition & { id: string; version: number }>();
    this.segmentSets.set(`${tenantId}/${environment}`, set);
    const write = ++this.writes;
    set.set(segment.key, { ...segment, id: set.get(segment.key)?.id ?? `s${write}`, version: write });
  }

  removeSegment(tenantId: string, environment: string, key: string): void {
    this.segmentSets.get(`${tenantId}/${environment}`)?.delete(key);
  }

  async findSegments(tenantId: string, environment: string): Promise<StoredSegment[]> {
    this.reads.push(`segments ${tenantId}/${environment}`);
    this.fail();
    return [...(this.segmentSets.get(`${tenantId}/${environment}`)?.values() ?? [])].map(storedSegment);
  }

  async findSegmentsByKeys(tenantId: string, environment: string, keys: readonly string[]): Promise<StoredSegment[]> {
    this.reads.push(`segment keys ${tenantId}/${environment} ${[...keys].sort().join(',')}`);
    this.fail();
    const set = this.segmentSets.get(`${tenantId}/${environment}`);
    return keys.flatMap((k) => (set?.has(k) ? [storedSegment(set.get(k)!)] : []));
  }

  async segmentFingerprints(tenantId: string, environment: string): Promise<Map<string, string>> {
    this.reads.push(`segment fingerprints ${tenantId}/${environment}`);
    this.fail();
    return new Map([...(this.segmentSets.get(`${tenantId}/${environment}`)?.values() ?? [])].map((s) => [s.key, `${s.id}:${s.version}`]));
  }

  remove(tenantId: string, environment: string, key: string): void {
    this.sets.get(`${tenantId}/${environment}`)?.delete(key);
  }

  async findAll(tenantId: string, environment: string): Promise<StoredFlag[]> {
    this.reads.push(`all ${tenantId}/${environment}`);
    this.fail();
    return [...(this.sets.get(`${tenantId}/${environment}`)?.values() ?? [])].map(stored);
  }

  async findByKeys(tenantId: string, environment: string, keys: readonly string[]): Promise<StoredFlag[]> {
    this.reads.push(`keys ${tenantId}/${environment} ${[...keys].sort().join(',')}`);
    this.fail();
    const set = this.sets.get(`${tenantId}/${environment}`);
    return keys.flatMap((k) => (set?.has(k) ? [stored(set.get(k)!)] : []));
  }

  async fingerprints(tenantId: string, environment: string): Promise<Map<string, string>> {
    this.reads.push(`fingerprints ${tenantId}/${environment}`);
    this.fail();
    return new Map([...(this.sets.get(`${tenantId}/${environment}`)?.values() ?? [])].map((f) => [f.key, f.fingerprint]));
  }

  async storedBytes(tenantId: string, environment: string): Promise<number> {
    this.reads.push(`bytes ${tenantId}/${environment}`);
    this.fail();
    let bytes = 0;
    for (const f of this.sets.get(`${tenantId}/${environment}`)?.values() ?? []) bytes += f.measured;
    return bytes;
  }

  private fail(): void {
    if (this.failing !== undefined) throw this.failing;
  }
}

function storedSegment({ id, ...definition }: SegmentDefinition & { id: string; version: number }): StoredSegment {
  return { key: definition.key, fingerprint: `${id}:${definition.version}`, definition };
}

function stored({ measured: _measured, ...flag }: StoredFlag & { measured: number }): StoredFlag {
  return flag;
}
