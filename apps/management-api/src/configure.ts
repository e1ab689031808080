import type { INestApplication } from '@nestjs/common';
import { APP_CONFIG } from '@flagship/config';
import { installConsole } from './console/console-static';
import type { ManagementApiConfig } from './env.schema';
import { installFastEvaluate } from './flags/fast-evaluate/install-fast-evaluate';
import { setupOpenApi } from './openapi';

/** bootstrapService's `configure` hook, shared by main.ts and the test fixture so both serve alike. */
export function configureManagementApi(app: INestApplication): void {
  setupOpenApi(app);
  installFastEvaluate(app);
  installConsole(app, app.get<ManagementApiConfig>(APP_CONFIG).CONSOLE_DIR);
}
