import { Module } from '@nestjs/common';
import { TenantsModule } from '../tenants/tenants.module';
import { EnvironmentsController } from './environments.controller';
import { EnvironmentsRepository } from './environments.repository';
import { EnvironmentsService } from './environments.service';

@Module({
  imports: [TenantsModule],
  controllers: [EnvironmentsController],
  providers: [EnvironmentsRepository, EnvironmentsService],
  exports: [EnvironmentsService],
})
export class EnvironmentsModule {}
