import './tracing';
import 'reflect-metadata';
import { runMain, SecretStore } from '@flagship/config';
import { startService } from '@flagship/service-kit';
import { AppModule } from './app.module';
import { loadOrepServerConfig } from './env.schema';
import { installFastPath } from './fast-path/install-fast-path';
import { startingKeys } from './keys/orep-keys.holder';

void runMain(async () => {
  const config = loadOrepServerConfig(process.env);
  // Client-side keys are secrets: from Secrets Manager when SECRETS_MANAGER_SECRET_ID is set, re-read there.
  const secrets = await SecretStore.forApp(process.env, config);
  startingKeys(config, secrets);
  await startService(config, AppModule.forConfig(config, secrets), {
    port: config.OREP_PORT,
    host: config.OREP_HOST,
    configure: installFastPath,
  });
});
