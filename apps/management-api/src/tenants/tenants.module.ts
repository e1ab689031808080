import { Module } from '@nestjs/common';
import { UsersModule } from '../users/users.module';
import { InvitationsController } from './invitations.controller';
import { InvitationsRepository, SqlInvitationsRepository } from './invitations.repository';
import { InvitationsService } from './invitations.service';
import { TenantsController } from './tenants.controller';
import { SqlTenantsRepository, TenantsRepository } from './tenants.repository';
import { TenantsService } from './tenants.service';

@Module({
  imports: [UsersModule],
  controllers: [TenantsController, InvitationsController],
  providers: [{ provide: TenantsRepository, useClass: SqlTenantsRepository }, TenantsService, { provide: InvitationsRepository, useClass: SqlInvitationsRepository }, InvitationsService],
  exports: [TenantsRepository, TenantsService],
})
export class TenantsModule {}
