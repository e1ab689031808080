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
