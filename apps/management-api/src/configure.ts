import type { INestApplication } from '@nestjs/common';
import { APP_CONFIG } from '@flagship/config';
import { installConsole } from './console/console-static';
import type { ManagementApiConfig } from './env.schema';
import { installEvaluateRoute } from './flags/evaluate/evaluate.route';
import { setupOpenApi } from './openapi';

/** bootstrapService's `configure` hook, shared by main.ts and the test fixture so both serve alike. */
export function configureManagementApi(app: INestApplication): void {
  setupOpenApi(app);
  installEvaluateRoute(app);
  const config = app.get<ManagementApiConfig>(APP_CONFIG);
  // In oidc mode the console's browser calls the provider (discovery, token endpoint): its origin only.
  installConsole(app, config.CONSOLE_DIR, config.IDP_MODE === 'oidc' ? [new URL(config.idpIssuer).origin] : []);
}
