import { Module } from '@nestjs/common';
import { UsersModule } from '../users/users.module';
import { InvitationsController } from './invitations.controller';
import { InvitationsRepository } from './invitations.repository';
import { InvitationsService } from './invitations.service';
import { TenantsController } from './tenants.controller';
import { TenantsRepository } from './tenants.repository';
import { TenantsService } from './tenants.service';

@Module({
  imports: [UsersModule],
  controllers: [TenantsController, InvitationsController],
  providers: [TenantsRepository, TenantsService, InvitationsRepository, InvitationsService],
  exports: [TenantsRepository, TenantsService],
})
export class TenantsModule {}
