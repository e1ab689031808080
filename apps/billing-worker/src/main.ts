import './tracing';
import 'reflect-metadata';
import { runMain, SecretStore } from '@flagship/config';
import { startService } from '@flagship/service-kit';
import { AppModule, RAW_BODY_PATHS } from './app.module';
import { loadBillingWorkerConfig } from './env.schema';

void runMain(async () => {
  const config = loadBillingWorkerConfig(process.env);
  // Stripe key, webhook secrets and price ids from the environment, or from AWS Secrets Manager, re-read so rotation needs no restart.
  const secrets = await SecretStore.forApp(process.env, config);
  await startService(config, AppModule.forConfig(config, secrets), { rawBodyPaths: RAW_BODY_PATHS });
});
