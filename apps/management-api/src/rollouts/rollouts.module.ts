import { Module } from '@nestjs/common';
import { ExperimentsModule } from '../experiments/experiments.module';
import { FlagsModule } from '../flags/flags.module';
import { RolloutsController } from './rollouts.controller';
import { RolloutsRepository, SqlRolloutsRepository } from './rollouts.repository';
import { RolloutRunner } from './rollouts.runner';
import { RolloutsService } from './rollouts.service';

@Module({
  imports: [FlagsModule, ExperimentsModule],
  controllers: [RolloutsController],
  providers: [{ provide: RolloutsRepository, useClass: SqlRolloutsRepository }, RolloutsService, RolloutRunner],
})
export class RolloutsModule {}
