import 'reflect-metadata';
import { runMain } from '@flagship/config';
import { startService } from '@flagship/service-kit';
import { AppModule } from './app.module';
import { loadManagementApiConfig } from './env.schema';
import { setupOpenApi } from './openapi';

void runMain(async () => {
  const config = loadManagementApiConfig(process.env);
  await startService(config, AppModule.forConfig(config), { configure: setupOpenApi });
});
