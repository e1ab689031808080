import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Outbound webhooks (CONTRACT.md section 10). A change writes its deliveries in its own transaction
 * through `webhook_enqueue` (one row per subscribed, enabled webhook: the outbox), so nothing is lost
 * and the request never waits for a receiver; billing-worker claims due rows with a lease and logs
 * each attempt. The ledger's low-balance crossings and budget months reach it by triggers, because
 * the gateway, not management-api, writes them, and in the same statement as the settlement.
 */
export class Webhooks1763885000000 implements MigrationInterface {
  name = 'Webhooks1763885000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE webhooks (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        url text NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
        description text NOT NULL DEFAULT '' CHECK (length(description) <= 500),
        events text[] NOT NULL CHECK (cardinality(events) BETWEEN 1 AND 16),
        secret_sealed text NOT NULL,
        enabled boolean NOT NULL DEFAULT true,
        failing_since timestamptz(3) NULL,
        disabled_at timestamptz(3) NULL,
        disabled_reason text NULL,
        dropped_events bigint NOT NULL DEFAULT 0,
        created_by text NULL,
        created_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX webhooks_tenant_idx ON webhooks (tenant_id, created_at, id)`);
    await q.query(`
      CREATE TABLE webhook_deliveries (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        -- The log's order: one change's events share created_at (the transaction's now()).
        seq bigint GENERATED ALWAYS AS IDENTITY,
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        webhook_id uuid NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
        event_type text NOT NULL,
        payload jsonb NOT NULL,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts int NOT NULL DEFAULT 0,
        next_attempt_at timestamptz(3) NOT NULL DEFAULT now(),
        created_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending'`);
    await q.query(`CREATE INDEX webhook_deliveries_log_idx ON webhook_deliveries (webhook_id, seq DESC)`);
    await q.query(`CREATE INDEX webhook_deliveries_backlog_idx ON webhook_deliveries (webhook_id) WHERE status = 'pending'`);
    await q.query(`CREATE INDEX webhook_deliveries_settled_idx ON webhook_deliveries (created_at) WHERE status <> 'pending'`);
    await q.query(`
      CREATE TABLE webhook_attempts (
        id bigserial PRIMARY KEY,
        delivery_id uuid NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
        attempt int NOT NULL,
        attempted_at timestamptz(3) NOT NULL DEFAULT now(),
        outcome text NOT NULL CHECK (outcome IN ('delivered', 'failed', 'refused')),
        response_code int NULL,
        duration_ms int NOT NULL,
        error text NULL CHECK (length(error) <= 500)
      )`);
    await q.query(`CREATE INDEX webhook_attempts_delivery_idx ON webhook_attempts (delivery_id, id)`);
    // The one fan-out: every writer of an event (management-api's services, the ledger's triggers) calls
    // it. A webhook whose receiver has 10000 deliveries waiting takes no more (a tenant writing
    // flags in a loop at a dead receiver must not fill the database); each event it missed is counted
    // on its row (dropped_events), which its admins read.
    await q.query(`
      CREATE FUNCTION webhook_enqueue(p_tenant uuid, p_type text, p_data jsonb) RETURNS void LANGUAGE sql AS $$
        WITH subscribed AS (
          SELECT w.id, w.tenant_id,
                 EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.webhook_id = w.id AND d.status = 'pending' OFFSET 9999 LIMIT 1) AS is_full
            FROM webhooks w
           WHERE w.tenant_id = p_tenant AND w.enabled AND p_type = ANY (w.events)
        ),
        dropped AS (
          UPDATE webhooks SET dropped_events = dropped_events + 1 WHERE id IN (SELECT id FROM subscribed WHERE is_full)
        )
        INSERT INTO webhook_deliveries (tenant_id, webhook_id, event_type, payload)
        SELECT s.tenant_id, s.id, p_type,
               jsonb_build_object('type', p_type, 'timestamp', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'data', p_data)
          FROM subscribed s
         WHERE NOT s.is_full
      $$`);
    await q.query(`
      CREATE FUNCTION webhook_credits_low() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM webhook_enqueue(NEW.tenant_id, 'credits.low', jsonb_build_object('threshold', NEW.threshold, 'balance', NEW.balance, 'crossedAt', NEW.crossed_at));
        RETURN NULL;
      END $$`);
    await q.query(`CREATE TRIGGER low_balance_crossings_webhook AFTER INSERT ON low_balance_crossings FOR EACH ROW EXECUTE FUNCTION webhook_credits_low()`);
    // Fires only when a month's spending grows (the WHEN clause costs nothing otherwise), and enqueues
    // only on the settlement that takes it from under its cap to at or over it: once per crossing.
    await q.query(`
      CREATE FUNCTION webhook_budget_exceeded() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE cap bigint;
      BEGIN
        SELECT monthly_cap INTO cap FROM budgets WHERE tenant_id = NEW.tenant_id AND scope_kind = NEW.scope_kind AND scope_id = NEW.scope_id;
        IF cap IS NOT NULL AND OLD.spent < cap AND NEW.spent >= cap THEN
          PERFORM webhook_enqueue(NEW.tenant_id, 'budget.exceeded', jsonb_build_object('scopeKind', NEW.scope_kind, 'scopeId', NEW.scope_id, 'month', to_char(NEW.month, 'YYYY-MM'), 'monthlyCap', cap, 'spent', NEW.spent));
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`CREATE TRIGGER budget_months_webhook AFTER UPDATE OF spent ON budget_months FOR EACH ROW WHEN (NEW.spent > OLD.spent) EXECUTE FUNCTION webhook_budget_exceeded()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER budget_months_webhook ON budget_months`);
    await q.query(`DROP TRIGGER low_balance_crossings_webhook ON low_balance_crossings`);
    await q.query(`DROP FUNCTION webhook_budget_exceeded()`);
    await q.query(`DROP FUNCTION webhook_credits_low()`);
    await q.query(`DROP FUNCTION webhook_enqueue(uuid, text, jsonb)`);
    await q.query(`DROP TABLE webhook_attempts`);
    await q.query(`DROP TABLE webhook_deliveries`);
    await q.query(`DROP TABLE webhooks`);
  }
}
