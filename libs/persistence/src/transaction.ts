import { Inject, Injectable } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';
import { DATA_SOURCE } from './tokens';

/** The transaction handle services pass to repositories (they need not import TypeORM). */
export type Tx = EntityManager;

const afterCommitActions = new WeakMap<Tx, Array<() => Promise<void>>>();

/**
 * Runs `action` once the transaction `tx` belongs to has committed, never when it rolls back: how
 * code running inside another feature's transaction (a hook) announces what it wrote. The action
 * must not throw (the write is committed by then). `tx` comes from TransactionRunner.run.
 */
export function afterCommit(tx: Tx, action: () => Promise<void>): void {
  const actions = afterCommitActions.get(tx);
  if (actions === undefined) throw new Error('afterCommit needs a transaction opened by TransactionRunner.run');
  actions.push(action);
}

/**
 * `work` in the transaction `open` gives it (a real one, or a unit test's stand-in), then, once that
 * has resolved (committed), the actions `work` registered with afterCommit, in order.
 */
export async function runWithAfterCommit<T>(open: (work: (tx: Tx) => Promise<T>) => Promise<T>, work: (tx: Tx) => Promise<T>): Promise<T> {
  const actions: Array<() => Promise<void>> = [];
  const result = await open(async (tx) => {
    // A stand-in handle may be shared by nested runs: the outer run's actions are kept for it.
    const outer = afterCommitActions.get(tx);
    afterCommitActions.set(tx, actions);
    try {
      return await work(tx);
    } finally {
      if (outer === undefined) afterCommitActions.delete(tx);
      else afterCommitActions.set(tx, outer);
    }
  });
  for (const action of actions) await action();
  return result;
}

/**
 * Runs `work` in one transaction: committed when it resolves, rolled back when it throws.
 * Services open transactions only through this, never undoing by hand.
 */
export function withTransaction<T>(dataSource: DataSource, work: (manager: EntityManager) => Promise<T>): Promise<T> {
  return dataSource.transaction('READ COMMITTED', work);
}

/**
 * How services open a transaction: injected, so a service names no TypeORM type and holds no
 * DataSource (STYLE.md: TypeORM stays in repositories); it hands the `Tx` to repository methods.
 */
@Injectable()
export class TransactionRunner {
  constructor(@Inject(DATA_SOURCE) private readonly dataSource: DataSource) {}

  /** `work` in one transaction: committed when it resolves, rolled back when it throws; then what it registered with afterCommit. */
  run<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return runWithAfterCommit((w) => withTransaction(this.dataSource, w), work);
  }
}

/** True for a Postgres unique-violation, so a service can turn it into a 409. */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: unknown; driverError?: { code?: unknown; constraint?: unknown }; constraint?: unknown };
  const code = e?.driverError?.code ?? e?.code;
  const name = e?.driverError?.constraint ?? e?.constraint;
  return code === '23505' && (constraint === undefined || name === constraint);
}
export type { DataSource } from 'typeorm';
