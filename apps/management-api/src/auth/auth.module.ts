import { type DynamicModule, Module, type Provider } from '@nestjs/common';
import { DevIdpModule } from '../dev-idp/dev-idp.module';
import { TenantsModule } from '../tenants/tenants.module';
import { UsersModule } from '../users/users.module';
import { AuthController } from './auth.controller';
import { AuthService } from './auth.service';
import { AuthenticationGuard } from './authentication.guard';
import { AuthorizationGuard } from './authorization.guard';
import { IdentityProviderAdapter } from './identity-provider.adapter';
import { IdTokenVerifier } from './id-token.verifier';
import { TenantAccessResolver } from './tenant-access.resolver';

/**
 * Who is calling: ID-token verification, the sign-in bootstrap, the tenant-access rules
 * (TenantAccessResolver) and the two guards that apply them to Nest routes. The app
 * registers the guards globally, in order, after providing CLIENT_TOKEN_PORT. Global: what outlives
 * a request (a flag-data stream) has its access decided again by the same resolver.
 */
@Module({})
export class AuthModule {
  static forRoot(idpMode: string, clientTokens: { imports: DynamicModule['imports']; factory: Provider }): DynamicModule {
    return {
      module: AuthModule,
      global: true,
      imports: [UsersModule, TenantsModule, DevIdpModule.forMode(idpMode), ...(clientTokens.imports ?? [])],
      controllers: [AuthController],
      providers: [AuthService, IdTokenVerifier, IdentityProviderAdapter, AuthenticationGuard, AuthorizationGuard, TenantAccessResolver, clientTokens.factory],
      exports: [AuthenticationGuard, AuthorizationGuard, TenantAccessResolver, IdTokenVerifier],
    };
  }
}
