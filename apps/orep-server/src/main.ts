import './tracing';
import 'reflect-metadata';
import { runMain } from '@flagship/config';
import { startService } from '@flagship/service-kit';
import { AppModule } from './app.module';
import { loadOrepServerConfig } from './env.schema';
import { installFastPath } from './fast-path/install-fast-path';

void runMain(async () => {
  const config = loadOrepServerConfig(process.env);
  await startService(config, AppModule.forConfig(config), {
    port: config.OREP_PORT,
    host: config.OREP_HOST,
    configure: installFastPath,
  });
});
