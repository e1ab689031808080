import type { FlagDefinition, SegmentDefinition } from '@flagship/flag-evaluation';

/** Anything that runs SQL with parameters (a pg Client or Pool). */
export interface SqlRunner {
  query(sql: string, params?: unknown[]): Promise<unknown>;
}

/**
 * Creates or changes a number flag whose value is `value` in `environment`, written with SQL as
 * management-api writes it (both rows' versions bumped), for specs of what reads flags from Postgres.
 */
export async function writeNumberFlag(db: SqlRunner, tenantId: string, key: string, value: number, environment = 'production'): Promise<void> {
  await db.query(
    `WITH f AS (
       INSERT INTO flags (tenant_id, key, name, type, default_value, variations)
       VALUES ($1, $2, $2, 'number', $3::jsonb, jsonb_build_array(jsonb_build_object('id', 'v', 'name', 'V', 'value', $3::jsonb, 'weight', 0)))
       ON CONFLICT (tenant_id, key) DO UPDATE
         SET default_value = EXCLUDED.default_value, variations = EXCLUDED.variations, version = flags.version + 1, updated_at = clock_timestamp()
       RETURNING id, tenant_id)
     INSERT INTO flag_environments (tenant_id, flag_id, environment_key, enabled)
     SELECT tenant_id, id, $4, true FROM f
     ON CONFLICT (flag_id, environment_key) DO UPDATE SET version = flag_environments.version + 1, updated_at = clock_timestamp()`,
    [tenantId, key, JSON.stringify(value), environment],
  );
}

/** The number flag writeNumberFlag writes, as the evaluator's definition: for specs of what holds or sends flags without Postgres. */
export function numberFlag(key: string, value: number): FlagDefinition {
  return { key, type: 'number', defaultValue: value, variations: [{ id: 'v', name: 'V', value, weight: 0 }], enabled: true, targets: [], rules: [], prerequisites: [] };
}

/** A segment that matches no one, with `overrides`: for specs of what holds, sends or evaluates segments. */
export function segmentDefinition(key: string, overrides: Partial<SegmentDefinition> = {}): SegmentDefinition {
  return { key, name: key, included: [], excluded: [], includedContexts: [], excludedContexts: [], rules: [], ...overrides };
}

/**
 * Creates or changes segment `key` of `environment` holding the user keys `included`, with SQL as
 * management-api writes it (its version bumped), for specs of what reads segments from Postgres.
 */
export async function writeSegment(db: SqlRunner, tenantId: string, key: string, included: string[], environment = 'production'): Promise<void> {
  await db.query(
    `INSERT INTO segments (tenant_id, environment_key, key, name, definition) VALUES ($1, $2, $3, $3, $4::jsonb)
     ON CONFLICT (tenant_id, environment_key, key) DO UPDATE SET definition = excluded.definition, version = segments.version + 1`,
    [tenantId, environment, key, JSON.stringify({ included, excluded: [], includedContexts: [], excludedContexts: [], rules: [] })],
  );
}

/**
 * Makes number flag `key` (writeNumberFlag's, worth `value` there) serve `inSegment` to the members
 * of segment `segmentKey` in `environment`, through a segmentMatch rule.
 */
export async function writeSegmentGatedFlag(db: SqlRunner, tenantId: string, key: string, segmentKey: string, value: number, inSegment: number, environment = 'production'): Promise<void> {
  await writeNumberFlag(db, tenantId, key, value, environment);
  await db.query(`UPDATE flags SET variations = variations || jsonb_build_array(jsonb_build_object('id', 'in', 'name', 'In', 'value', $3::jsonb, 'weight', 0)) WHERE tenant_id = $1 AND key = $2`, [
    tenantId,
    key,
    JSON.stringify(inSegment),
  ]);
  const rules = [{ id: 'in-segment', clauses: [{ attribute: 'key', op: 'segmentMatch', values: [segmentKey] }], variationId: 'in' }];
  await db.query(
    `UPDATE flag_environments SET rules = $4::jsonb, version = version + 1
      WHERE tenant_id = $1 AND environment_key = $3 AND flag_id = (SELECT id FROM flags WHERE tenant_id = $1 AND key = $2)`,
    [tenantId, key, environment, JSON.stringify(rules)],
  );
}
