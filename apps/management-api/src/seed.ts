import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { runMain } from '@flagship/config';
import { TenantEntity, TransactionRunner } from '@flagship/persistence';
import { AppModule } from './app.module';
import { loadManagementApiConfig } from './env.schema';
import { EnvironmentsRepository } from './environments/environments.repository';
import { SandboxService } from './sandbox/sandbox.service';
import { pendingSubject } from './users/user.entity';

/** The demo tenant `npm start` creates, with a fixed id so the README can name it. */
export const DEMO_TENANT_ID = '00000000-0000-4000-8000-00000000d3e0';
export const DEMO_EMAIL = 'demo@example.com';

/**
 * `npm run seed`: idempotent demo data for local use. The demo tenant (plan premium) gets the
 * default environments, the sandbox's demo project and flags, and demo@example.com as a pending
 * admin: whoever signs up with that e-mail (dev identity provider) lands in it.
 */
void runMain(async () => {
  // The seed needs no identity provider; dev mode keeps it from demanding one when NODE_ENV is unset.
  const config = loadManagementApiConfig({ NODE_ENV: 'development', IDP_MODE: 'dev', LOG_LEVEL: 'warn', ...process.env });
  const app = await NestFactory.createApplicationContext(AppModule.forConfig(config), { logger: ['error', 'warn'] });
  try {
    const created = await app.get(TransactionRunner).run(async (m) => {
      const rows: unknown[] = await m.query(
        `INSERT INTO tenants (id, name, primary_email, contact_name, plan) VALUES ($1, 'Demo Co', $2, 'Demo Admin', 'premium')
         ON CONFLICT (id) DO NOTHING RETURNING id`,
        [DEMO_TENANT_ID, DEMO_EMAIL],
      );
      if (rows.length === 0) return false;
      await app.get(EnvironmentsRepository).insertDefaults(m, DEMO_TENANT_ID);
      const [user] = (await m.query(
        `INSERT INTO users (idp_subject, email, display_name) VALUES ($1, $2, 'Demo Admin')
         ON CONFLICT (idp_subject) DO UPDATE SET email = EXCLUDED.email RETURNING id`,
        [pendingSubject(DEMO_EMAIL), DEMO_EMAIL],
      )) as Array<{ id: string }>;
      await m.query(`INSERT INTO memberships (tenant_id, user_id, role) VALUES ($1, $2, 'admin') ON CONFLICT DO NOTHING`, [DEMO_TENANT_ID, user.id]);
      const tenant = (await m.getRepository(TenantEntity).findOneBy({ id: DEMO_TENANT_ID }))!;
      await app.get(SandboxService).seed(m, tenant);
      return true;
    });
    process.stdout.write(`demo tenant ${DEMO_TENANT_ID} ${created ? 'created' : 'already there'}; sign up as ${DEMO_EMAIL} to use it\n`);
  } finally {
    await app.close();
  }
});
