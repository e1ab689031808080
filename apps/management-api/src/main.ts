import './tracing';
import 'reflect-metadata';
import { runMain, SecretStore } from '@flagship/config';
import { startService } from '@flagship/service-kit';
import { AppModule } from './app.module';
import { loadManagementApiConfig } from './env.schema';
import { configureManagementApi } from './configure';

void runMain(async () => {
  const config = loadManagementApiConfig(process.env);
  // Secrets (OAUTH_SIGNING_KEY) from the environment, or from AWS Secrets Manager, re-read so rotation needs no restart.
  const secrets = await SecretStore.forApp(process.env, config);
  await startService(config, AppModule.forConfig(config, secrets), { configure: configureManagementApi });
});
