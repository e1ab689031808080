import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The AI gateway now requires the `ai:invoke` scope. Existing clients that have called the gateway
 * (a usage_ledger row of theirs exists) get it, so the backends that already spend credits keep
 * working once they fetch a new token; every other client keeps exactly the scopes it was given, so
 * one made for reading flags (or with no scope at all) that never used the gateway cannot start now.
 */
export class OAuthClientsAiInvoke1763810000000 implements MigrationInterface {
  name = 'OAuthClientsAiInvoke1763810000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      UPDATE oauth_clients c SET scopes = array_append(c.scopes, 'ai:invoke')
      WHERE c.deleted_at IS NULL
        AND NOT ('ai:invoke' = ANY (c.scopes))
        AND EXISTS (SELECT 1 FROM usage_ledger u WHERE u.tenant_id = c.tenant_id AND u.client_id = c.client_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    // The code before this migration knows no `ai:invoke`.
    await q.query(`UPDATE oauth_clients SET scopes = array_remove(scopes, 'ai:invoke') WHERE 'ai:invoke' = ANY (scopes)`);
  }
}
