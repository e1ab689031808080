import 'reflect-metadata';
import { runMain } from '@flagship/config';
import { startService } from '@flagship/service-kit';
import { AppModule } from './app.module';
import { loadBillingWorkerConfig } from './env.schema';

void runMain(async () => {
  const config = loadBillingWorkerConfig(process.env);
  await startService(config, AppModule.forConfig(config));
});
