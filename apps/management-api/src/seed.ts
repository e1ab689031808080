import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { runMain } from '@flagship/config';
import { AppModule } from './app.module';
import { DEMO_CREDITS, DEMO_EMAIL, DEMO_TENANT_ID, seedDemo } from './demo-seed';
import { loadManagementApiConfig } from './env.schema';

/**
 * `npm run seed`: the demo data of demo-seed.ts. The last line, `demo-oauth-client <id> <secret>`,
 * is what `npm start` reads to show the demo client's credentials.
 */
void runMain(async () => {
  // The seed needs no identity provider; dev mode keeps it from demanding one when NODE_ENV is unset.
  const config = loadManagementApiConfig({ NODE_ENV: 'development', IDP_MODE: 'dev', LOG_LEVEL: 'warn', ...process.env });
  const app = await NestFactory.createApplicationContext(AppModule.forConfig(config), { logger: ['error', 'warn'] });
  try {
    const r = await seedDemo(app);
    process.stdout.write(`demo tenant ${DEMO_TENANT_ID} ${r.created ? 'created' : 'already there'}; sign up as ${DEMO_EMAIL} to use it\n`);
    process.stdout.write(
      `demo tenant: enterprise entitlement for core; ${r.creditsGranted ? `${DEMO_CREDITS} micro-credits granted` : 'demo credits granted before'}\n`,
    );
    process.stdout.write(`demo-oauth-client ${r.clientId} ${r.clientSecret}\n`);
  } finally {
    await app.close();
  }
});
