import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Guarded rollouts of model bindings (CONTRACT.md section 11) and the experiment report's reads:
 * - `rollout_states`: where a binding's rollout plan stands, one per binding; `binding_version` is
 *   the binding version whose plan it runs (a new plan starts over), `flag_version`/`env_version`
 *   the flag's versions after the plan's last write (another write since stops the plan),
 *   `next_check_at` when a running plan is judged next.
 * - `rollout_decisions`: the decision log (started, advanced, held, rolled back, completed, stopped,
 *   paused) with its reason and figures.
 * - (the ledger's index by flag, which the report and the rollout read, is usage_ledger_flag_idx of ModelBindingRoutes1763910000000)
 *
 * down: drops them.
 */
export class ModelRollouts1763915000000 implements MigrationInterface {
  name = 'ModelRollouts1763915000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE rollout_states (
        tenant_id uuid NOT NULL,
        product_key text NOT NULL,
        binding_version integer NOT NULL,
        flag_key text NOT NULL,
        status text NOT NULL CHECK (status IN ('running', 'paused', 'completed', 'rolled_back', 'stopped')),
        stage integer NOT NULL DEFAULT 0,
        stage_started_at timestamptz(3) NOT NULL,
        control_id text,
        treatment_id text,
        flag_version integer,
        env_version integer,
        last_reason text,
        next_check_at timestamptz(3) NOT NULL,
        updated_at timestamptz(3) NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant_id, product_key),
        FOREIGN KEY (tenant_id, product_key) REFERENCES gateway_bindings (tenant_id, product_key) ON DELETE CASCADE
      )`);
    await q.query(`CREATE INDEX rollout_states_due_idx ON rollout_states (next_check_at) WHERE status = 'running'`);
    await q.query(`
      CREATE TABLE rollout_decisions (
        id bigserial PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        product_key text NOT NULL,
        binding_version integer NOT NULL,
        flag_key text NOT NULL,
        decision text NOT NULL CHECK (decision IN ('started', 'advanced', 'held', 'rolled_back', 'completed', 'stopped', 'paused')),
        stage integer NOT NULL,
        percent double precision NOT NULL,
        reason text NOT NULL,
        figures jsonb,
        flag_version integer,
        created_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX rollout_decisions_binding_idx ON rollout_decisions (tenant_id, product_key, id DESC)`);
    // The report's and the rollout's reads of the ledger by flag use usage_ledger_flag_idx, built per
    // partition by ModelBindingRoutes1763910000000.
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE rollout_decisions');
    await q.query('DROP TABLE rollout_states');
  }
}
