import { Module } from '@nestjs/common';
import { FlagsModule } from '../flags/flags.module';
import { ExperimentsController } from './experiments.controller';
import { ExperimentsRepository } from './experiments.repository';
import { ExperimentsService } from './experiments.service';

@Module({ imports: [FlagsModule], controllers: [ExperimentsController], providers: [ExperimentsRepository, ExperimentsService], exports: [ExperimentsRepository] })
export class ExperimentsModule {}
