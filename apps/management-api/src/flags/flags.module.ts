import { Module } from '@nestjs/common';
import { EnvironmentsModule } from '../environments/environments.module';
import { ProjectsModule } from '../projects/projects.module';
import { EvaluationCounter } from './evaluation-counter';
import { FlagEvents } from './flag-events';
import { FlagSnapshots } from './flag-snapshots';
import { FlagStreamController } from './flag-stream.controller';
import { FlagStreams } from './flag-streams';
import { FlagsController } from './flags.controller';
import { FlagsRepository } from './flags.repository';
import { FlagsService } from './flags.service';

@Module({
  imports: [ProjectsModule, EnvironmentsModule],
  controllers: [FlagsController, FlagStreamController],
  providers: [FlagsRepository, FlagsService, FlagSnapshots, FlagStreams, FlagEvents, EvaluationCounter],
  exports: [FlagsService, FlagsRepository],
})
export class FlagsModule {}
