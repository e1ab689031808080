import { writtenBetween } from './completion.sql';

/**
 * The "upstream called" stamp (migration 1763840100000) on rows of requests sent to their provider;
 * a row no longer pending is not stamped. One row by its primary key as a prepared statement, a batch
 * through an unnest planned each time (as SETTLE, so the plan follows the table's size); the rows'
 * months bound the partitions read (writtenBetween).
 */
export const MARK_CALLED_ONE = `UPDATE usage_ledger u SET upstream_called_at = now() WHERE u.tenant_id = $1::uuid AND u.id = $2::uuid AND u.completed_at IS NULL AND ${writtenBetween(3, 4)} RETURNING u.id`;
export const MARK_CALLED = `
UPDATE usage_ledger u SET upstream_called_at = now()
  FROM unnest($1::uuid[], $2::uuid[]) AS r(id, tenant_id)
 WHERE u.tenant_id = r.tenant_id AND u.id = r.id AND u.completed_at IS NULL AND ${writtenBetween(3, 4)}
RETURNING u.id`;

/**
 * A commit that waits for the WAL flush (on a synchronous_commit=on connection) and so puts on disk
 * every record written before it, the asynchronous reservations and settlements included. It must write
 * WAL to wait at all, so it upserts its own connection's row (migration 1763840200000): no shared lock.
 */
export const FLUSH_BARRIER = `
INSERT INTO ledger_flush_barriers (backend_pid, flushed_at) VALUES (pg_backend_pid(), now())
ON CONFLICT (backend_pid) DO UPDATE SET flushed_at = excluded.flushed_at`;
