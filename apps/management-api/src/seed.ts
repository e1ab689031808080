import 'reflect-metadata';
import { commonEnv, loadConfig, runMain } from '@flagship/config';
import { createDataSource } from '@flagship/persistence';

/** The demo tenant `npm start` creates, with a fixed id so the README can name it. */
export const DEMO_TENANT_ID = '00000000-0000-4000-8000-00000000d3e0';

/** `npm run seed`: idempotent demo data for local use. */
void runMain(async () => {
  const { DATABASE_URL } = loadConfig(process.env, { DATABASE_URL: commonEnv.DATABASE_URL });
  const ds = createDataSource({ url: DATABASE_URL, poolSize: 1, applicationName: 'flagship-seed' });
  await ds.initialize();
  try {
    await ds.query(
      `INSERT INTO tenants (id, name, primary_email, contact_name, plan)
       VALUES ($1, 'Demo Co', 'demo@example.com', 'Demo Admin', 'premium')
       ON CONFLICT (id) DO NOTHING`,
      [DEMO_TENANT_ID],
    );
    process.stdout.write(`demo tenant ${DEMO_TENANT_ID} ready\n`);
  } finally {
    await ds.destroy();
  }
});
