import { Inject, Injectable } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';
import { DATA_SOURCE } from '@flagship/persistence';

/** One partition of usage_ledger and its range (`from` null: MINVALUE; both null: the DEFAULT partition). */
export interface LedgerPartition {
  name: string;
  from: Date | null;
  to: Date | null;
  isDefault: boolean;
}

/**
 * A row retention never removes (by DROP or DELETE): still `pending` (its reservation is not settled),
 * or billable and not yet accepted by Stripe's meter (the outbox's own condition, usage_meter).
 * Both halves match a partial index (pending_idx, unmetered_idx), so the probe is cheap.
 */
export const HELD_ROW = `(status = 'pending' OR (status IN ('succeeded', 'abandoned') AND NOT zero_rated AND debit > 0 AND meter_reported_at IS NULL))`;

/** The transaction-scoped advisory lock every replica's partition maintenance takes (any constant; it names nothing else). */
const PARTITIONS_LOCK_KEY = '3510352001';

/**
 * The lock wait of a maintenance step that takes a lock the gateway's statements queue behind (ATTACH
 * on the DEFAULT partition, DROP on the parent): a long read in the way makes the step give up and try
 * again on the next pass, never the gateway wait behind it for longer than this.
 */
const LOCK_TIMEOUT = '1s';

/** `2026-12-01` -> `usage_ledger_y2026m12` (the migration's names). */
export function monthPartitionName(monthStart: string): string {
  return `usage_ledger_y${monthStart.slice(0, 4)}m${monthStart.slice(5, 7)}`;
}

/** `'2026-12-01 00:00:00+00'` as pg_get_expr prints a timestamptz bound under TimeZone UTC. */
function boundDate(text: string): Date {
  return new Date(text.replace(' ', 'T').replace(/\+00$/, 'Z'));
}

/** `FOR VALUES FROM ('…') TO ('…')`, `FROM (MINVALUE) TO ('…')`, `DEFAULT`. */
function parseBound(name: string, bound: string): LedgerPartition {
  if (bound === 'DEFAULT') return { name, from: null, to: null, isDefault: true };
  const m = /FROM \((?:MINVALUE|'([^']+)')\) TO \((?:MAXVALUE|'([^']+)')\)/.exec(bound);
  if (!m) throw new Error(`usage_ledger partition ${name} has a bound this code does not read: ${bound}`);
  return { name, from: m[1] ? boundDate(m[1]) : null, to: m[2] ? boundDate(m[2]) : null, isDefault: false };
}

async function partitionsIn(m: EntityManager): Promise<LedgerPartition[]> {
  // Bounds printed in UTC whatever the session's zone (the caller's transaction sets it).
  await m.query(`SET LOCAL TimeZone = 'UTC'`);
  const rows: Array<{ name: string; bound: string }> = await m.query(
    `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
       FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = 'usage_ledger'::regclass
      ORDER BY c.relname`,
  );
  return rows.map((r) => parseBound(r.name, r.bound));
}

const overlaps = (p: LedgerPartition, from: Date, to: Date): boolean =>
  !p.isDefault && (p.from === null || p.from < to) && (p.to === null || p.to > from);

/**
 * usage_ledger's monthly partitions (migration 1763905000000): billing-worker creates them ahead and
 * drops whole months past retention (docs/decisions/2026-11-29-partitioned-ledger.md). Safe with any
 * number of replicas: each change runs in a transaction holding one advisory lock and looks again at
 * the catalogue under it, so a second replica finds the work done.
 */
@Injectable()
export class UsagePartitionsRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {}

  /** Every partition with its range, oldest first (the DEFAULT partition last). */
  async list(): Promise<LedgerPartition[]> {
    const all = await this.ds.transaction((m) => partitionsIn(m));
    return all.sort((a, b) => (a.isDefault ? 1 : b.isDefault ? -1 : (a.from?.getTime() ?? -Infinity) - (b.from?.getTime() ?? -Infinity)));
  }

  /**
   * Makes sure the running UTC month and the `ahead` after it each fall in a partition; returns the
   * names created. A month's rows that went to the DEFAULT partition (none, unless maintenance stopped
   * for months) move into its new partition in the same transaction, under the DEFAULT's lock.
   */
  async ensureAhead(ahead: number): Promise<string[]> {
    return this.ensureMonths(0, ahead);
  }

  /** ensureAhead's work for the UTC months `first` to `last` from the running one (negative: past months with no partition yet). */
  async ensureMonths(first: number, last: number): Promise<string[]> {
    // Before migration 1763905000000 (a worker started ahead of the migration Job): nothing to make.
    const [table]: Array<{ relkind: string }> = await this.ds.query(`SELECT relkind FROM pg_class WHERE oid = 'usage_ledger'::regclass`);
    if (table?.relkind !== 'p') return [];
    const months: Array<{ from: string; to: string }> = await this.ds.query(
      `SELECT to_char(m + make_interval(months => g), 'YYYY-MM-DD') AS from, to_char(m + make_interval(months => g + 1), 'YYYY-MM-DD') AS to
         FROM (SELECT date_trunc('month', now() AT TIME ZONE 'UTC') AS m) x, generate_series($1::int, $2::int) g ORDER BY g`,
      [first, last],
    );
    const created: string[] = [];
    for (const month of months) if (await this.createMonth(month.from, month.to)) created.push(monthPartitionName(month.from));
    return created;
  }

  private createMonth(from: string, to: string): Promise<boolean> {
    return this.ds.transaction(async (m) => {
      await m.query(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
      await m.query('SELECT pg_advisory_xact_lock($1)', [PARTITIONS_LOCK_KEY]);
      const [fromAt, toAt] = [new Date(`${from}T00:00:00Z`), new Date(`${to}T00:00:00Z`)];
      const partitions = await partitionsIn(m);
      if (partitions.some((p) => overlaps(p, fromAt, toAt))) return false;
      const name = monthPartitionName(from);
      const range = `FROM ('${from} 00:00:00+00') TO ('${to} 00:00:00+00')`;
      await m.query(
        `CREATE TABLE ${name} (LIKE usage_ledger INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMMENTS INCLUDING GENERATED INCLUDING IDENTITY)`,
      );
      const fallback = partitions.find((p) => p.isDefault);
      if (fallback) {
        // Writes to the DEFAULT partition wait from here to the commit (there are none while the months
        // ahead exist); ATTACH then finds none of this month's rows left in it.
        await m.query(`LOCK TABLE ${fallback.name} IN EXCLUSIVE MODE`);
        const columns: Array<{ name: string }> = await m.query(
          `SELECT quote_ident(attname) AS name FROM pg_attribute WHERE attrelid = 'usage_ledger'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
        );
        const list = columns.map((c) => c.name).join(', ');
        await m.query(
          `WITH moved AS (DELETE FROM ${fallback.name} WHERE created_at >= $1::timestamptz AND created_at < $2::timestamptz RETURNING ${list})
           INSERT INTO ${name} (${list}) SELECT ${list} FROM moved`,
          [`${from}T00:00:00Z`, `${to}T00:00:00Z`],
        );
      }
      // ATTACH (not CREATE ... PARTITION OF): SHARE UPDATE EXCLUSIVE on usage_ledger, so the gateway's writes go on.
      await m.query(`ALTER TABLE usage_ledger ATTACH PARTITION ${name} FOR VALUES ${range}`);
      return true;
    });
  }

  /** Rows in the DEFAULT partition (0 while partitions are made ahead; more means maintenance stopped). */
  async defaultRows(): Promise<number> {
    const fallback = (await this.list()).find((p) => p.isDefault);
    if (!fallback) return 0;
    const [row]: Array<{ n: number }> = await this.ds.query(`SELECT count(*)::int AS n FROM ONLY ${fallback.name}`);
    return row!.n;
  }

  /** The start of the UTC month `months` before the running one: rows created before it are past a retention of `months`. */
  async cutoff(months: number): Promise<Date> {
    const [row]: Array<{ at: Date }> = await this.ds.query(
      `SELECT (date_trunc('month', now() AT TIME ZONE 'UTC') - make_interval(months => $1::int)) AT TIME ZONE 'UTC' AS at`,
      [months],
    );
    return row!.at;
  }

  /**
   * Drops each partition whose whole range is before `cutoff`, unless it holds a row retention never
   * removes (HELD_ROW): such a partition is kept (`held`) and tried again on a later pass. The check
   * runs again under an ACCESS EXCLUSIVE lock on usage_ledger (DROP of a partition takes it anyway),
   * taken first so the lock order is the gateway's (parent, then partition): held for the probe of two
   * partial indexes and a catalogue change.
   */
  async dropBefore(cutoff: Date): Promise<{ dropped: string[]; held: string[] }> {
    const dropped: string[] = [];
    const held: string[] = [];
    for (const p of await this.list()) {
      if (p.isDefault || p.to === null || p.to > cutoff) continue;
      if (await this.holds(this.ds.manager, p.name)) {
        held.push(p.name);
        continue;
      }
      const gone = await this.ds.transaction(async (m) => {
        await m.query(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
        await m.query('SELECT pg_advisory_xact_lock($1)', [PARTITIONS_LOCK_KEY]);
        if (!(await partitionsIn(m)).some((q) => q.name === p.name)) return false;
        await m.query('LOCK TABLE usage_ledger IN ACCESS EXCLUSIVE MODE');
        if (await this.holds(m, p.name)) return false;
        await m.query(`DROP TABLE ${p.name}`);
        return true;
      });
      if (gone) dropped.push(p.name);
      else held.push(p.name);
    }
    return { dropped, held };
  }

  /**
   * Deletes up to `limit` rows of tenants on `plan` created before `cutoff`, never a HELD_ROW; returns
   * how many. For a plan keeping less than the partitions do (they are dropped at the longest
   * retention). The transaction sets `flagship.usage_retention` so a trigger on usage_ledger can tell
   * retention from a change of usage (rollups keep what was used, whatever retention removes).
   */
  async deleteBefore(plan: string, cutoff: Date, limit: number): Promise<number> {
    return this.ds.transaction(async (m) => {
      await m.query(`SET LOCAL flagship.usage_retention = 'on'`);
      const rows: Array<{ n: number }> = await m.query(
        `WITH doomed AS (
           SELECT u.id, u.created_at FROM usage_ledger u
            WHERE u.created_at < $2 AND u.tenant_id IN (SELECT id FROM tenants WHERE plan = $1)
              AND NOT ${HELD_ROW.replace(/\b(status|zero_rated|debit|meter_reported_at)\b/g, 'u.$1')}
            LIMIT $3
         ), gone AS (
           DELETE FROM usage_ledger u USING doomed d WHERE u.id = d.id AND u.created_at = d.created_at RETURNING 1
         )
         SELECT count(*)::int AS n FROM gone`,
        [plan, cutoff, limit],
      );
      return rows[0]!.n;
    });
  }

  private async holds(m: EntityManager, partition: string): Promise<boolean> {
    const [row]: Array<{ held: boolean }> = await m.query(`SELECT EXISTS (SELECT 1 FROM ONLY ${partition} WHERE ${HELD_ROW}) AS held`);
    return row!.held;
  }
}
