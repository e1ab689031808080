import { Module } from '@nestjs/common';
import { FlagsModule } from '../flags/flags.module';
import { ProjectsModule } from '../projects/projects.module';
import { TenantsModule } from '../tenants/tenants.module';
import { SandboxController } from './sandbox.controller';
import { SandboxService } from './sandbox.service';

@Module({ imports: [TenantsModule, FlagsModule, ProjectsModule], controllers: [SandboxController], providers: [SandboxService] })
export class SandboxModule {}
