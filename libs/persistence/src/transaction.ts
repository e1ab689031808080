import { Inject, Injectable } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';
import { DATA_SOURCE } from './tokens';

/** The transaction handle services pass to repositories (they need not import TypeORM). */
export type Tx = EntityManager;

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

  /** `work` in one transaction: committed when it resolves, rolled back when it throws. */
  run<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return withTransaction(this.dataSource, work);
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
