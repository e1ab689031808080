import { type DynamicModule, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { platformModules } from '@flagship/service-kit';
import { AdminModule } from './admin/admin.module';
import { AuthModule } from './auth/auth.module';
import { AuthenticationGuard } from './auth/authentication.guard';
import { AuthorizationGuard } from './auth/authorization.guard';
import { CLIENT_TOKEN_PORT } from './auth/client-token.port';
import { MembershipEntity } from './tenants/membership.entity';
import { DevIdpAccountEntity, DevIdpKeyEntity } from './dev-idp/dev-idp.entity';
import type { ManagementApiConfig } from './env.schema';
import { ProductTourEntity } from './product-tours/product-tour.entity';
import { ProductToursModule } from './product-tours/product-tours.module';
import { TenantsModule } from './tenants/tenants.module';
import { UserEntity } from './users/user.entity';

const ENTITIES = [UserEntity, MembershipEntity, DevIdpAccountEntity, DevIdpKeyEntity, ProductTourEntity];

@Module({})
export class AppModule {
  static forConfig(config: ManagementApiConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ...platformModules(config, { serviceName: 'management-api', entities: ENTITIES }),
        AuthModule.forRoot(config.IDP_MODE, {
          imports: [],
          provider: { provide: CLIENT_TOKEN_PORT, useValue: { isAccessToken: () => false, verify: () => Promise.reject(new Error('no client tokens yet')) } },
        }),
        TenantsModule,
        AdminModule,
        ProductToursModule,
      ],
      // Global guards run in this order: who is calling, then may they act in this tenant.
      providers: [
        { provide: APP_GUARD, useExisting: AuthenticationGuard },
        { provide: APP_GUARD, useExisting: AuthorizationGuard },
      ],
    };
  }
}
