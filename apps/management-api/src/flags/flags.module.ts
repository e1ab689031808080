import { Module } from '@nestjs/common';
import { EnvironmentsModule } from '../environments/environments.module';
import { ProjectsModule } from '../projects/projects.module';
import { EvaluationCounter } from './evaluation-counter';
import { FlagEvents } from './flag-events';
import { FlagSnapshots } from './flag-snapshots';
import { FlagsController } from './flags.controller';
import { FlagsRepository } from './flags.repository';
import { FlagsService } from './flags.service';

@Module({
  imports: [ProjectsModule, EnvironmentsModule],
  controllers: [FlagsController],
  providers: [FlagsRepository, FlagsService, FlagSnapshots, FlagEvents, EvaluationCounter],
  exports: [FlagsService, FlagsRepository],
})
export class FlagsModule {}
