import { type DynamicModule, type InjectionToken, Module, type ModuleMetadata, type OptionalFactoryDependency, type Provider } from '@nestjs/common';
import { AccessTokenIssuer } from './access-token.issuer';
import { AccessTokenVerifier } from './access-token.verifier';
import { ClientTokenStrategy } from './client-token.strategy';
import { ClientRevocations, REVOCATION_RECORDER } from './client-revocations';
import { ClientTokenGuard, ScopesGuard } from './client-token.guard';
import { OAUTH_OPTIONS, type OAuthModuleOptions, resolveOAuthOptions } from './oauth.options';
import { RevokedClientsRepository } from './revoked-clients.repository';
import { SigningKeyService } from './signing-key.service';
import { SigningKeysRepository } from './signing-keys.repository';
import { VerificationKeys } from './verification-keys';

const SERVICES: Provider[] = [
  SigningKeysRepository,
  RevokedClientsRepository,
  VerificationKeys,
  SigningKeyService,
  AccessTokenIssuer,
  ClientRevocations,
  { provide: REVOCATION_RECORDER, useExisting: ClientRevocations },
  AccessTokenVerifier,
  ClientTokenStrategy,
  ClientTokenGuard,
  ScopesGuard,
];

const EXPORTS = [
  OAUTH_OPTIONS,
  VerificationKeys,
  SigningKeyService,
  AccessTokenIssuer,
  ClientRevocations,
  REVOCATION_RECORDER,
  AccessTokenVerifier,
  ClientTokenStrategy,
  ClientTokenGuard,
  ScopesGuard,
];

export interface OAuthModuleAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  inject?: Array<InjectionToken | OptionalFactoryDependency>;
  useFactory: (...args: never[]) => OAuthModuleOptions | Promise<OAuthModuleOptions>;
}

/**
 * Access tokens for every app: verifier, revocations, passport strategy and guards everywhere;
 * signing key and issuer where `issuing` is set (management-api). Needs the DATA_SOURCE and Redis
 * providers of `platformModules`. Global: import it once, at the root.
 */
@Module({})
export class OAuthModule {
  static forRoot(options: OAuthModuleOptions): DynamicModule {
    return {
      module: OAuthModule,
      global: true,
      providers: [{ provide: OAUTH_OPTIONS, useValue: resolveOAuthOptions(options) }, ...SERVICES],
      exports: EXPORTS,
    };
  }

  /** Options from other providers (a SecretStore built at start-up, say). */
  static forRootAsync(options: OAuthModuleAsyncOptions): DynamicModule {
    return {
      module: OAuthModule,
      global: true,
      imports: options.imports ?? [],
      providers: [
        {
          provide: OAUTH_OPTIONS,
          inject: options.inject ?? [],
          useFactory: async (...args: never[]) => resolveOAuthOptions(await options.useFactory(...args)),
        },
        ...SERVICES,
      ],
      exports: EXPORTS,
    };
  }
}
