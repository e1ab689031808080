import { randomUUID } from 'node:crypto';
import type { Clause, SegmentDefinition } from '@flagship/flag-evaluation';
import type { TransactionRunner, Tx } from '@flagship/persistence';
import type { PageCursor } from '@flagship/service-kit';
import { snapshotTransactions } from '../testing/inline-transactions';
import {
  type NewSegmentFields,
  type SegmentAuditRecord,
  type SegmentAuditRow,
  type SegmentChanges,
  segmentDefinitionOf,
  type SegmentRow,
  SegmentsRepository,
} from './segments.repository';

interface State {
  segments: SegmentRow[];
  audit: Array<SegmentAuditRow & { tenantId: string }>;
  /** `${tenantId}/${environment}` -> the flags' rules there (what flagsUsing reads of flag_environments). */
  flagRules: Map<string, Map<string, ReadonlyArray<{ clauses: readonly Clause[] }>>>;
}

const uniqueViolation = (): Error => Object.assign(new Error('duplicate key value violates unique constraint "segments_pkey"'), { code: '23505' });
const names = (rules: unknown, key: string): boolean =>
  Array.isArray(rules) &&
  rules.some((r: { clauses?: unknown }) => Array.isArray(r?.clauses) && r.clauses.some((c: { op?: unknown; values?: unknown }) => c?.op === 'segmentMatch' && Array.isArray(c.values) && c.values.includes(key)));
// Copies through JSON: under jest, structuredClone makes objects of another realm, which the evaluator's checks refuse as not plain.
const json = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;
const cloneRow = (r: SegmentRow): SegmentRow => ({ ...r, definition: json(r.definition), createdAt: new Date(r.createdAt), updatedAt: new Date(r.updatedAt) });
const copy = (s: State): State => ({ segments: s.segments.map(cloneRow), audit: [...s.audit], flagRules: new Map([...s.flagRules].map(([k, v]) => [k, new Map(v)])) });

/**
 * In-memory twin of SqlSegmentsRepository for service unit tests: same contract, no I/O. Flags
 * that use segments are seeded with `useFlag` (the real one reads them from flag_environments).
 * Its transaction runner undoes what a throwing transaction wrote, as Postgres does.
 */
export class FakeSegmentsRepository extends SegmentsRepository {
  private state: State = { segments: [], audit: [], flagRules: new Map() };
  private clock = Date.parse('2026-01-01T00:00:00Z');
  private auditId = 0;

  readonly transactions: Pick<TransactionRunner, 'run'> = snapshotTransactions({ get: () => this.state, set: (saved) => void (this.state = saved) }, copy);

  /** A flag of the environment with these rules (replacing what it had), for flagsUsing. */
  useFlag(tenantId: string, environment: string, flagKey: string, rules: ReadonlyArray<{ clauses: readonly Clause[] }>): void {
    const id = `${tenantId}/${environment}`;
    const flags = this.state.flagRules.get(id) ?? new Map();
    flags.set(flagKey, rules);
    this.state.flagRules.set(id, flags);
  }

  /** What the segments-per-tenant quota counts (every environment's). */
  countSegments(tenantId: string): number {
    return this.state.segments.filter((s) => s.tenantId === tenantId).length;
  }

  /** What the segment-bytes-per-tenant quota counts. */
  countBytes(tenantId: string): number {
    return this.state.segments.filter((s) => s.tenantId === tenantId).reduce((sum, s) => sum + s.definitionBytes, 0);
  }

  private tick(): Date {
    this.clock += 1;
    return new Date(this.clock);
  }

  private at(tenantId: string, environment: string, key: string): SegmentRow | undefined {
    return this.state.segments.find((s) => s.tenantId === tenantId && s.environment === environment && s.key === key);
  }

  async find(tenantId: string, environment: string, key: string): Promise<SegmentRow | null> {
    const row = this.at(tenantId, environment, key);
    return row ? cloneRow(row) : null;
  }

  lock(_m: Tx, tenantId: string, environment: string, key: string): Promise<SegmentRow | null> {
    return this.find(tenantId, environment, key);
  }

  async list(tenantId: string, environment: string, limit: number, after?: PageCursor): Promise<SegmentRow[]> {
    const order = (s: SegmentRow): [number, string] => [s.createdAt.getTime(), s.id];
    return this.state.segments
      .filter((s) => s.tenantId === tenantId && s.environment === environment)
      .filter((s) => after === undefined || s.createdAt.getTime() > Date.parse(after.at) || (s.createdAt.getTime() === Date.parse(after.at) && s.id > after.id))
      .sort((a, b) => order(a)[0] - order(b)[0] || (order(a)[1] < order(b)[1] ? -1 : 1))
      .slice(0, limit + 1)
      .map(cloneRow);
  }

  async insert(_m: Tx, tenantId: string, environment: string, f: NewSegmentFields): Promise<SegmentRow> {
    if (this.at(tenantId, environment, f.key)) throw uniqueViolation();
    const at = this.tick();
    const row: SegmentRow = { tenantId, environment, id: randomUUID(), version: 1, createdAt: at, updatedAt: at, ...json(f) };
    this.state.segments.push(row);
    return cloneRow(row);
  }

  async update(_m: Tx, tenantId: string, environment: string, key: string, expectedVersion: number, changes: SegmentChanges): Promise<boolean> {
    const row = this.at(tenantId, environment, key);
    if (!row || row.version !== expectedVersion) return false;
    Object.assign(row, json(changes), { version: row.version + 1, updatedAt: this.tick() });
    return true;
  }

  async delete(_m: Tx, tenantId: string, environment: string, key: string): Promise<boolean> {
    const before = this.state.segments.length;
    this.state.segments = this.state.segments.filter((s) => !(s.tenantId === tenantId && s.environment === environment && s.key === key));
    return this.state.segments.length < before;
  }

  async lockMany(_m: Tx, tenantId: string, environment: string, keys: readonly string[]): Promise<Map<string, SegmentRow>> {
    const out = new Map<string, SegmentRow>();
    for (const key of [...keys].sort()) {
      const row = this.at(tenantId, environment, key);
      if (row) out.set(key, cloneRow(row));
    }
    return out;
  }

  async upsertMany(m: Tx, tenantId: string, environment: string, segments: readonly NewSegmentFields[]): Promise<void> {
    for (const f of segments) {
      const row = this.at(tenantId, environment, f.key);
      if (row) Object.assign(row, json(f), { version: row.version + 1, updatedAt: this.tick() });
      else await this.insert(m, tenantId, environment, f);
    }
  }

  async definitions(tenantId: string, environment: string): Promise<SegmentDefinition[]> {
    return this.state.segments
      .filter((s) => s.tenantId === tenantId && s.environment === environment)
      .sort((a, b) => (a.key < b.key ? -1 : 1))
      .map((s) => json(segmentDefinitionOf(s)));
  }

  async flagsUsing(tenantId: string, environment: string, key: string): Promise<string[]> {
    const flags = this.state.flagRules.get(`${tenantId}/${environment}`) ?? new Map();
    return [...flags].filter(([, rules]) => names(rules, key)).map(([k]) => k as string).sort();
  }

  async segmentsUsing(tenantId: string, environment: string, key: string): Promise<string[]> {
    return this.state.segments
      .filter((s) => s.tenantId === tenantId && s.environment === environment && s.key !== key && names(s.definition.rules, key))
      .map((s) => s.key)
      .sort();
  }

  async audit(_m: Tx, tenantId: string, r: SegmentAuditRecord): Promise<void> {
    this.auditId += 1;
    this.state.audit.push({ ...json(r), tenantId, id: String(this.auditId), createdAt: this.tick() });
  }

  async auditMany(m: Tx, tenantId: string, records: readonly SegmentAuditRecord[]): Promise<void> {
    for (const r of records) await this.audit(m, tenantId, r);
  }

  async auditTrail(tenantId: string, environment: string, key: string): Promise<SegmentAuditRow[]> {
    return this.state.audit
      .filter((a) => a.tenantId === tenantId && a.environment === environment && a.segmentKey === key)
      .map(({ tenantId: _t, ...a }) => ({ ...json(a), createdAt: new Date(a.createdAt) }));
  }
}
