import { Module } from '@nestjs/common';
import { TenantsModule } from '../tenants/tenants.module';
import { UsersModule } from '../users/users.module';
import { AdminController } from './admin.controller';
import { CreditsRepository } from '@flagship/ledger';
import { AdminRepository } from './admin.repository';
import { AdminService } from './admin.service';

@Module({ imports: [UsersModule, TenantsModule], controllers: [AdminController], providers: [AdminRepository, CreditsRepository, AdminService] })
export class AdminModule {}
