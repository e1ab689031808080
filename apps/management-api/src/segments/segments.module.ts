import { Module } from '@nestjs/common';
import { EnvironmentsModule } from '../environments/environments.module';
import { FlagsModule } from '../flags/flags.module';
import { SegmentsController } from './segments.controller';
import { SegmentsRepository, SqlSegmentsRepository } from './segments.repository';
import { SegmentsService } from './segments.service';

@Module({
  imports: [EnvironmentsModule, FlagsModule],
  controllers: [SegmentsController],
  providers: [{ provide: SegmentsRepository, useClass: SqlSegmentsRepository }, SegmentsService],
  exports: [SegmentsService],
})
export class SegmentsModule {}
