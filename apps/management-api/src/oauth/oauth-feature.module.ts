import { type DynamicModule, Module } from '@nestjs/common';
import { OAuthModule, type SecretSource } from '@flagship/oauth';
import { OAuthClientEntity } from './oauth-client.entity';
import { OAuthClientsRepository, TypeOrmOAuthClientsRepository } from './oauth-clients.repository';
import { OAuthClientsService } from './oauth-clients.service';
import {
  OAUTH_FEATURE_OPTIONS,
  type OAuthFeatureConfig,
  type OAuthFeatureOptions,
  oauthFeatureOptionsFromConfig,
  resolveOAuthFeatureOptions,
} from './oauth-feature.options';
import { OAuthClientsController } from './oauth-clients.controller';
import { OAuthMetadataController } from './oauth-metadata.controller';
import { OAuthTokenController } from './oauth-token.controller';
import { OAuthTokenService } from './oauth-token.service';
import { SigningKeyMetrics } from './signing-key.metrics';

/** Entities of this feature, for `platformModules(config, { entities })`. */
export const OAUTH_FEATURE_ENTITIES = [OAuthClientEntity];

/**
 * OAuth in management-api: `POST /oauth/token`, `/.well-known/jwks.json`,
 * `/.well-known/oauth-authorization-server`, and OAuthClientsService for the clients API. Imports
 * OAuthModule (global: the verifier, guards and revocations serve the whole app), so the app must
 * not import OAuthModule a second time.
 */
@Module({})
export class OAuthFeatureModule {
  static forRoot(options: OAuthFeatureOptions): DynamicModule {
    if (!options.oauth.issuing) throw new Error('OAuthFeatureModule: management-api issues tokens, set oauth.issuing');
    return {
      module: OAuthFeatureModule,
      // Global for its one export: features that name a client (billing's budgets) ask OAuthClientsService whether it exists.
      global: true,
      imports: [OAuthModule.forRoot(options.oauth)],
      controllers: [OAuthTokenController, OAuthMetadataController, OAuthClientsController],
      providers: [
        { provide: OAUTH_FEATURE_OPTIONS, useValue: resolveOAuthFeatureOptions(options) },
        { provide: OAuthClientsRepository, useClass: TypeOrmOAuthClientsRepository },
        OAuthClientsService,
        OAuthTokenService,
        SigningKeyMetrics,
      ],
      exports: [OAuthClientsService],
    };
  }

  /** From management-api's config; `secrets` is its SecretStore (OAUTH_SIGNING_KEY). */
  static forConfig(config: OAuthFeatureConfig, secrets?: SecretSource, extra: { requireConfiguredKey?: boolean } = {}): DynamicModule {
    return OAuthFeatureModule.forRoot(oauthFeatureOptionsFromConfig(config, secrets, extra));
  }
}
