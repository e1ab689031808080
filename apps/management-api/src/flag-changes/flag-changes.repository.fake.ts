import { randomUUID } from 'node:crypto';
import type { TransactionRunner, Tx } from '@flagship/persistence';
import { snapshotTransactions } from '../testing/inline-transactions';
import {
  type ChangeComment,
  type ChangeRequestRow,
  type ChangeRequestUpdate,
  FlagChangesRepository,
  LIST_LIMIT,
  type NewChangeRequest,
  type NewScheduledChange,
  type ScheduledChangeRow,
  type ScheduledChangeState,
} from './flag-changes.repository';

interface State {
  requests: ChangeRequestRow[];
  scheduled: ScheduledChangeRow[];
}

// Copies through JSON (dates revived by field): jest's vm realm refuses structuredClone's objects in the evaluator's checks.
const json = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;
const date = (d: Date | null): Date | null => (d === null ? null : new Date(d));
const copyRequest = (r: ChangeRequestRow): ChangeRequestRow => ({
  ...json(r),
  executeAt: date(r.executeAt),
  decidedAt: date(r.decidedAt),
  appliedAt: date(r.appliedAt),
  createdAt: new Date(r.createdAt),
});
const copyScheduled = (r: ScheduledChangeRow): ScheduledChangeRow => ({ ...json(r), executeAt: new Date(r.executeAt), finishedAt: date(r.finishedAt), createdAt: new Date(r.createdAt) });
const copy = (s: State): State => ({ requests: s.requests.map(copyRequest), scheduled: s.scheduled.map(copyScheduled) });
const newestFirst = (a: { at: number; id: string }, b: { at: number; id: string }): number => b.at - a.at || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

/**
 * In-memory twin of SqlFlagChangesRepository for service unit tests: same contract, no I/O, no
 * locks (a unit test runs one write at a time; the race is proven on Postgres). `locked` stands for
 * rows another executor holds, which claimDue skips.
 */
export class FakeFlagChangesRepository extends FlagChangesRepository {
  private state: State = { requests: [], scheduled: [] };
  private clock = Date.parse('2026-01-01T00:00:00Z');
  readonly locked = new Set<string>();

  readonly transactions: Pick<TransactionRunner, 'run'> = snapshotTransactions({ get: () => this.state, set: (saved) => void (this.state = saved) }, copy);

  private tick(): Date {
    this.clock += 1;
    return new Date(this.clock);
  }

  async insertRequest(_m: Tx, tenantId: string, f: NewChangeRequest): Promise<ChangeRequestRow> {
    const row: ChangeRequestRow = {
      ...json(f),
      executeAt: date(f.executeAt),
      tenantId,
      id: randomUUID(),
      state: 'pending',
      decidedBy: null,
      decidedAt: null,
      appliedBy: null,
      appliedAt: null,
      createdAt: this.tick(),
    };
    this.state.requests.push(row);
    return copyRequest(row);
  }

  async findRequest(tenantId: string, environment: string, flagKey: string, id: string): Promise<ChangeRequestRow | null> {
    const r = this.state.requests.find((x) => x.tenantId === tenantId && x.environment === environment && x.flagKey === flagKey && x.id === id);
    return r ? copyRequest(r) : null;
  }

  async listRequests(tenantId: string, environment: string, flagKey: string): Promise<ChangeRequestRow[]> {
    return this.state.requests
      .filter((x) => x.tenantId === tenantId && x.environment === environment && x.flagKey === flagKey)
      .sort((a, b) => newestFirst({ at: a.createdAt.getTime(), id: a.id }, { at: b.createdAt.getTime(), id: b.id }))
      .slice(0, LIST_LIMIT)
      .map(copyRequest);
  }

  async countOpenRequests(_m: Tx, tenantId: string, environment: string, flagKey: string): Promise<number> {
    return this.state.requests.filter((x) => x.tenantId === tenantId && x.environment === environment && x.flagKey === flagKey && (x.state === 'pending' || x.state === 'approved')).length;
  }

  async updateRequest(_m: Tx, tenantId: string, id: string, changes: ChangeRequestUpdate): Promise<void> {
    const r = this.state.requests.find((x) => x.tenantId === tenantId && x.id === id);
    if (r) Object.assign(r, changes);
  }

  async addComment(_m: Tx, tenantId: string, id: string, comment: ChangeComment): Promise<void> {
    this.state.requests.find((x) => x.tenantId === tenantId && x.id === id)?.comments.push(json(comment));
  }

  async lockTenantAndCountOpen(_m: Tx, tenantId: string): Promise<number> {
    const requests = this.state.requests.filter((x) => x.tenantId === tenantId && (x.state === 'pending' || x.state === 'approved')).length;
    return requests + this.state.scheduled.filter((x) => x.tenantId === tenantId && x.state === 'scheduled').length;
  }

  async insertScheduled(_m: Tx, tenantId: string, f: NewScheduledChange): Promise<ScheduledChangeRow> {
    const row: ScheduledChangeRow = { ...json(f), executeAt: new Date(f.executeAt), tenantId, id: randomUUID(), state: 'scheduled', reason: null, finishedAt: null, createdAt: this.tick() };
    this.state.scheduled.push(row);
    return copyScheduled(row);
  }

  async findScheduled(tenantId: string, environment: string, flagKey: string, id: string): Promise<ScheduledChangeRow | null> {
    const r = this.state.scheduled.find((x) => x.tenantId === tenantId && x.environment === environment && x.flagKey === flagKey && x.id === id);
    return r ? copyScheduled(r) : null;
  }

  async listScheduled(tenantId: string, environment: string, flagKey: string): Promise<ScheduledChangeRow[]> {
    return this.state.scheduled
      .filter((x) => x.tenantId === tenantId && x.environment === environment && x.flagKey === flagKey)
      .sort((a, b) => newestFirst({ at: a.executeAt.getTime(), id: a.id }, { at: b.executeAt.getTime(), id: b.id }))
      .slice(0, LIST_LIMIT)
      .map(copyScheduled);
  }

  async countScheduled(_m: Tx, tenantId: string, environment: string, flagKey: string): Promise<number> {
    return this.state.scheduled.filter((x) => x.tenantId === tenantId && x.environment === environment && x.flagKey === flagKey && x.state === 'scheduled').length;
  }

  async claimDue(_m: Tx, now: Date): Promise<ScheduledChangeRow | null> {
    const due = this.state.scheduled
      .filter((x) => x.state === 'scheduled' && x.executeAt.getTime() <= now.getTime() && !this.locked.has(x.id))
      .sort((a, b) => a.executeAt.getTime() - b.executeAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return due[0] ? copyScheduled(due[0]) : null;
  }

  async claimScheduled(_m: Tx, tenantId: string, id: string): Promise<ScheduledChangeRow | null> {
    const r = this.state.scheduled.find((x) => x.tenantId === tenantId && x.id === id && x.state === 'scheduled' && !this.locked.has(x.id));
    return r ? copyScheduled(r) : null;
  }

  async finishScheduled(_m: Tx, tenantId: string, id: string, state: Exclude<ScheduledChangeState, 'scheduled'>, reason: string | null, at: Date): Promise<void> {
    const r = this.state.scheduled.find((x) => x.tenantId === tenantId && x.id === id);
    if (r) Object.assign(r, { state, reason, finishedAt: new Date(at) });
  }
}
