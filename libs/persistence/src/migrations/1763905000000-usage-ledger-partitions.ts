import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * usage_ledger becomes a table range-partitioned by month on `created_at` (issue 35,
 * docs/decisions/2026-11-29-partitioned-ledger.md), without stopping the gateway and without copying
 * a row: the table as it is becomes the partition holding the past, `[MINVALUE, cutover)`, and the
 * months from the cutover get partitions of their own (billing-worker creates the following ones
 * ahead, and drops whole expired months: USAGE_RETENTION_MONTHS).
 *
 * Every step that reads the whole table runs under a lock that lets the gateway's writes go on;
 * the one step under an ACCESS EXCLUSIVE lock (the swap) only changes the catalogue:
 * 1. a unique index on (id, created_at), built CONCURRENTLY: the new primary key must hold the
 *    partition key, and ATTACH adopts this index rather than building one under its lock;
 * 2. CHECK constraints added NOT VALID earlier (budget_month_iff_held) are validated: a partition
 *    must hold every CHECK of the parent as valid;
 * 3. `created_at < cutover`, added NOT VALID then validated (SHARE UPDATE EXCLUSIVE), so ATTACH
 *    finds the partition's bound already proven and does not scan the table under its lock. The
 *    cutover is the next month's start, or the one after when less than a day is left (new rows
 *    must satisfy the check while the table is still the live one);
 * 4. in one short transaction: the table is renamed usage_ledger_before_yYYYYmMM, its primary key
 *    becomes (id, created_at) on the index of step 1, a partitioned usage_ledger is made LIKE it (same
 *    columns, defaults, checks), with its foreign keys, indexes and triggers, the old table attached
 *    (its indexes, foreign key and checks are adopted, not rebuilt), the three months from the
 *    cutover and a DEFAULT partition created. Statements waiting on the lock then resolve
 *    `usage_ledger` again and go to the new table; prepared statements are re-planned.
 *
 * Ids stay unique by construction (the gateway's randomUUID, gen_random_uuid): the key (id,
 * created_at) no longer proves it across months; no statement relies on a conflict on id.
 *
 * Not in a transaction (CREATE INDEX CONCURRENTLY cannot run in one); every step can be run again
 * after a failure (an invalid index from an interrupted build is dropped and built again).
 *
 * down: the rows are copied back into one plain table with the primary key (id) (a copy: fine for a
 * development database, hours on a big one).
 */
export class UsageLedgerPartitions1763905000000 implements MigrationInterface {
  name = 'UsageLedgerPartitions1763905000000';
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    if (await isPartitioned(q)) return;
    // 1. The key with the partition column, built while writes go on.
    const [built] = await q.query(`SELECT i.indisvalid AS valid FROM pg_index i WHERE i.indexrelid = to_regclass('usage_ledger_id_created_at_key')`);
    if (built && !built.valid) await q.query(`DROP INDEX CONCURRENTLY usage_ledger_id_created_at_key`);
    if (!built || !built.valid) await q.query(`CREATE UNIQUE INDEX CONCURRENTLY usage_ledger_id_created_at_key ON usage_ledger (id, created_at)`);
    // 2. Every CHECK valid (a scan under SHARE UPDATE EXCLUSIVE: writes go on).
    const notValid: Array<{ conname: string }> = await q.query(
      `SELECT conname FROM pg_constraint WHERE conrelid = 'usage_ledger'::regclass AND contype = 'c' AND NOT convalidated`,
    );
    for (const c of notValid) await q.query(`ALTER TABLE usage_ledger VALIDATE CONSTRAINT ${ident(c.conname)}`);
    // 3. The bound of the past, proven before the swap.
    const [{ cutover }]: Array<{ cutover: string }> = await q.query(
      `SELECT to_char(m + CASE WHEN m + interval '1 month' - (now() AT TIME ZONE 'UTC') < interval '1 day' THEN interval '2 months' ELSE interval '1 month' END, 'YYYY-MM-DD') AS cutover
         FROM (SELECT date_trunc('month', now() AT TIME ZONE 'UTC') AS m) x`,
    );
    const bound = utcMonthStart(cutover);
    await withLockRetries(q, async () => {
      await q.query(`SET LOCAL lock_timeout = '2s'`);
      await q.query(`ALTER TABLE usage_ledger DROP CONSTRAINT IF EXISTS usage_ledger_past_bound`);
      await q.query(`ALTER TABLE usage_ledger ADD CONSTRAINT usage_ledger_past_bound CHECK (created_at < '${bound}'::timestamptz) NOT VALID`);
    });
    await q.query(`ALTER TABLE usage_ledger VALIDATE CONSTRAINT usage_ledger_past_bound`);
    // 4. The swap: catalogue changes only.
    const past = `usage_ledger_before_${monthSuffix(cutover)}`;
    await withLockRetries(q, async () => {
      await q.query(`SET LOCAL lock_timeout = '2s'`);
      await q.query(`LOCK TABLE usage_ledger IN ACCESS EXCLUSIVE MODE`);
      const indexes: Array<{ name: string; def: string }> = await q.query(
        `SELECT c.relname AS name, pg_get_indexdef(i.indexrelid) AS def FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
          WHERE i.indrelid = 'usage_ledger'::regclass AND NOT i.indisprimary AND c.relname <> 'usage_ledger_id_created_at_key'`,
      );
      const foreignKeys: Array<{ name: string; def: string }> = await q.query(
        `SELECT conname AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = 'usage_ledger'::regclass AND contype = 'f'`,
      );
      const triggers: Array<{ name: string; def: string }> = await q.query(
        `SELECT tgname AS name, pg_get_triggerdef(oid) AS def FROM pg_trigger WHERE tgrelid = 'usage_ledger'::regclass AND NOT tgisinternal`,
      );
      await q.query(`ALTER TABLE usage_ledger RENAME TO ${past}`);
      await q.query(`ALTER TABLE ${past} DROP CONSTRAINT usage_ledger_pkey`);
      await q.query(`ALTER TABLE ${past} ADD CONSTRAINT ${past}_pkey PRIMARY KEY USING INDEX usage_ledger_id_created_at_key`);
      for (const ix of indexes) await q.query(`ALTER INDEX ${ident(ix.name)} RENAME TO ${ident(partitionIndexName(past, ix.name))}`);
      // Row triggers are cloned onto every partition from the parent (the old table's own go first, or it would fire both).
      for (const t of triggers) await q.query(`DROP TRIGGER ${ident(t.name)} ON ${past}`);
      await q.query(
        `CREATE TABLE usage_ledger (LIKE ${past} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMMENTS INCLUDING GENERATED INCLUDING IDENTITY)
           PARTITION BY RANGE (created_at)`,
      );
      await q.query(`ALTER TABLE usage_ledger DROP CONSTRAINT usage_ledger_past_bound`);
      await q.query(`ALTER TABLE usage_ledger ADD CONSTRAINT usage_ledger_pkey PRIMARY KEY (id, created_at)`);
      for (const fk of foreignKeys) await q.query(`ALTER TABLE usage_ledger ADD CONSTRAINT ${ident(fk.name)} ${fk.def}`);
      for (const ix of indexes) await q.query(ix.def.replace(/ ON (ONLY )?(public\.)?usage_ledger /, ' ON usage_ledger '));
      for (const t of triggers) await q.query(t.def.replace(/ ON (public\.)?usage_ledger /, ' ON usage_ledger '));
      await q.query(`ALTER TABLE usage_ledger ATTACH PARTITION ${past} FOR VALUES FROM (MINVALUE) TO ('${bound}')`);
      for (let i = 0; i < 3; i++) {
        const [{ from, to }]: Array<{ from: string; to: string }> = await q.query(
          `SELECT to_char($1::date + make_interval(months => $2), 'YYYY-MM-DD') AS from, to_char($1::date + make_interval(months => $2 + 1), 'YYYY-MM-DD') AS to`,
          [cutover, i],
        );
        await q.query(`CREATE TABLE usage_ledger_${monthSuffix(from)} PARTITION OF usage_ledger FOR VALUES FROM ('${utcMonthStart(from)}') TO ('${utcMonthStart(to)}')`);
      }
      await q.query(`CREATE TABLE usage_ledger_default PARTITION OF usage_ledger DEFAULT`);
    });
    // The parent's own statistics (autovacuum never analyses a partitioned table): sampled, no write lock.
    await q.query(`ANALYZE usage_ledger`);
  }

  async down(q: QueryRunner): Promise<void> {
    if (!(await isPartitioned(q))) return;
    await q.startTransaction();
    try {
      const indexes: Array<{ def: string }> = await q.query(
        `SELECT pg_get_indexdef(i.indexrelid) AS def FROM pg_index i WHERE i.indrelid = 'usage_ledger'::regclass AND NOT i.indisprimary`,
      );
      const foreignKeys: Array<{ name: string; def: string }> = await q.query(
        `SELECT conname AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = 'usage_ledger'::regclass AND contype = 'f'`,
      );
      const triggers: Array<{ def: string }> = await q.query(`SELECT pg_get_triggerdef(oid) AS def FROM pg_trigger WHERE tgrelid = 'usage_ledger'::regclass AND NOT tgisinternal`);
      await q.query(`LOCK TABLE usage_ledger IN ACCESS EXCLUSIVE MODE`);
      await q.query(`ALTER TABLE usage_ledger RENAME TO usage_ledger_partitioned`);
      await q.query(
        `CREATE TABLE usage_ledger (LIKE usage_ledger_partitioned INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMMENTS INCLUDING GENERATED INCLUDING IDENTITY)`,
      );
      await q.query(`INSERT INTO usage_ledger SELECT * FROM usage_ledger_partitioned`);
      await q.query(`DROP TABLE usage_ledger_partitioned`);
      await q.query(`ALTER TABLE usage_ledger ADD CONSTRAINT usage_ledger_pkey PRIMARY KEY (id)`);
      for (const fk of foreignKeys) await q.query(`ALTER TABLE usage_ledger ADD CONSTRAINT ${ident(fk.name)} ${fk.def}`);
      for (const ix of indexes) await q.query(ix.def.replace(/ ON (ONLY )?(public\.)?usage_ledger /, ' ON usage_ledger '));
      for (const t of triggers) await q.query(t.def.replace(/ ON (ONLY )?(public\.)?usage_ledger /, ' ON usage_ledger '));
      await q.commitTransaction();
    } catch (err) {
      await q.rollbackTransaction();
      throw err;
    }
  }
}

async function isPartitioned(q: QueryRunner): Promise<boolean> {
  const [row] = await q.query(`SELECT relkind FROM pg_class WHERE oid = 'usage_ledger'::regclass`);
  return row?.relkind === 'p';
}

/**
 * `work` in a transaction, again (up to 30 times, a second apart) when a lock was not granted within
 * its lock_timeout: a long read in the way makes the swap wait for it, never the gateway for the swap
 * for longer than the timeout.
 */
async function withLockRetries(q: QueryRunner, work: () => Promise<void>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    await q.startTransaction();
    try {
      await work();
      await q.commitTransaction();
      return;
    } catch (err) {
      await q.rollbackTransaction();
      if ((err as { code?: string }).code !== '55P03' || attempt >= 30) throw err;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

/** `2026-12-01` -> `y2026m12`. */
function monthSuffix(day: string): string {
  return `y${day.slice(0, 4)}m${day.slice(5, 7)}`;
}

function utcMonthStart(day: string): string {
  return `${day.slice(0, 10)} 00:00:00+00`;
}

/** `usage_ledger_tenant_idx` on the old table -> `usage_ledger_before_y2026m12_tenant_idx` (at most 63 bytes). */
function partitionIndexName(past: string, index: string): string {
  return `${past}_${index.replace(/^usage_ledger_/, '')}`.slice(0, 63);
}

/** A catalogue name quoted as an identifier. */
function ident(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
