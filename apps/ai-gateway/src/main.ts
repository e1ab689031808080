import './tracing';
import 'reflect-metadata';
import { runMain, SecretStore } from '@flagship/config';
import { startService } from '@flagship/service-kit';
import { AppModule } from './app.module';
import { loadAiGatewayConfig } from './env.schema';
import { installGateway } from './install-gateway';

void runMain(async () => {
  const config = loadAiGatewayConfig(process.env);
  // Provider API keys (PROVIDER_INHOUSE_API_KEY, PROVIDER_HOSTED_API_KEY) from the environment or AWS Secrets Manager.
  const secrets = await SecretStore.forApp(process.env, config);
  await startService(config, AppModule.forConfig(config, secrets), { configure: installGateway });
});
