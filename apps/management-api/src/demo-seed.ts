import type { INestApplicationContext } from '@nestjs/common';
import { APP_CONFIG } from '@flagship/config';
import { hashSecret } from '@flagship/oauth';
import { TenantEntity, TransactionRunner } from '@flagship/persistence';
import { CreditsRepository } from '@flagship/ledger';
import { AdminRepository } from './admin/admin.repository';
import type { ManagementApiConfig } from './env.schema';
import { EnvironmentsRepository } from './environments/environments.repository';
import { newClientSecret } from './oauth/client-credentials';
import { SandboxService } from './sandbox/sandbox.service';
import { InvitationsRepository } from './tenants/invitations.repository';

/** The demo tenant `npm start` creates, with a fixed id so the README can name it. */
export const DEMO_TENANT_ID = '00000000-0000-4000-8000-00000000d3e0';
export const DEMO_EMAIL = 'demo@example.com';
/** The demo tenant's OAuth client for the AI gateway quickstart; its secret is new at every seed. */
export const DEMO_CLIENT_ID = 'ffc_demoGatewayClient000001';
/** Micro-credits the demo tenant starts with (10 credits), granted once. */
export const DEMO_CREDITS = 10_000_000;
const DEMO_CREDITS_REASON = 'demo credits (seed)';

export interface DemoSeedResult {
  created: boolean;
  creditsGranted: boolean;
  clientId: string;
  clientSecret: string;
}

/**
 * The demo data `npm run seed` writes for local use, idempotent. The demo tenant (plan premium) gets the
 * default environments, the sandbox's demo project and flags, and an invitation of demo@example.com
 * as admin: whoever signs up with that (verified) e-mail accepts it to join (GET /api/invitations). For the AI gateway
 * it gets an `enterprise` entitlement for `core`, 10 credits (once) and the OAuth client
 * DEMO_CLIENT_ID, whose secret is rotated on every run (only its hash is stored) and returned.
 */
export async function seedDemo(app: INestApplicationContext): Promise<DemoSeedResult> {
  const transactions = app.get(TransactionRunner);
  const created = await transactions.run(async (m) => {
    const rows: unknown[] = await m.query(
      `INSERT INTO tenants (id, name, primary_email, contact_name, plan) VALUES ($1, 'Demo Co', $2, 'Demo Admin', 'premium')
       ON CONFLICT (id) DO NOTHING RETURNING id`,
      [DEMO_TENANT_ID, DEMO_EMAIL],
    );
    if (rows.length === 0) return false;
    await app.get(EnvironmentsRepository).insertDefaults(m, DEMO_TENANT_ID);
    const ttlMs = app.get<ManagementApiConfig>(APP_CONFIG).INVITATION_TTL_DAYS * 86_400_000;
    await app.get(InvitationsRepository).upsertPending(m, DEMO_TENANT_ID, DEMO_EMAIL, 'admin', null, ttlMs);
    const tenant = (await m.getRepository(TenantEntity).findOneBy({ id: DEMO_TENANT_ID }))!;
    await app.get(SandboxService).seed(m, tenant, 'seed');
    return true;
  });
  const clientSecret = newClientSecret();
  const secretHash = await hashSecret(clientSecret);
  const granted = await transactions.run(async (m) => {
    await m.query(
      `INSERT INTO oauth_clients (tenant_id, client_id, name, secret_hash, scopes, product_keys) VALUES ($1, $2, 'Demo gateway client', $3, $4, '{}')
       ON CONFLICT (client_id) DO UPDATE SET secret_hash = EXCLUDED.secret_hash, scopes = EXCLUDED.scopes, secret_rotated_at = now(), deleted_at = NULL
       WHERE oauth_clients.tenant_id = EXCLUDED.tenant_id`,
      [DEMO_TENANT_ID, DEMO_CLIENT_ID, secretHash, ['flags:read', 'flags:evaluate', 'ai:invoke']],
    );
    const credits = app.get(CreditsRepository);
    if (await credits.hasGrant(m, DEMO_TENANT_ID, DEMO_CREDITS_REASON)) return false;
    await credits.grantCredits(m, DEMO_TENANT_ID, { amount: DEMO_CREDITS, reason: DEMO_CREDITS_REASON, grantedBy: 'seed' });
    return true;
  });
  await app.get(AdminRepository).upsertEntitlement(DEMO_TENANT_ID, 'core', 'enterprise', null);
  return { created, creditsGranted: granted, clientId: DEMO_CLIENT_ID, clientSecret };
}
