import { Module } from '@nestjs/common';
import { APP_CONFIG } from '@flagship/config';
import { EvaluationRecorder, EvaluationsRepository, FlagStore, FlagStoreRepository } from '@flagship/flag-store';
import { HttpMetrics } from '@flagship/service-kit';
import { ProblemException } from '@flagship/problem-details';
import { PUBSUB, type PubSub } from '@flagship/redis';
import type { ManagementApiConfig } from '../env.schema';
import { EnvironmentsModule } from '../environments/environments.module';
import { ChangeRequestsService } from '../flag-changes/change-requests.service';
import { FlagChangesController } from '../flag-changes/flag-changes.controller';
import { FlagChangesRepository, SqlFlagChangesRepository } from '../flag-changes/flag-changes.repository';
import { ScheduledChangesRunner } from '../flag-changes/scheduled-changes.runner';
import { ScheduledChangesService } from '../flag-changes/scheduled-changes.service';
import { ProjectsModule } from '../projects/projects.module';
import { SegmentsController } from '../segments/segments.controller';
import { SegmentsRepository, SqlSegmentsRepository } from '../segments/segments.repository';
import { SegmentsService } from '../segments/segments.service';
import { EvaluationCounter } from './evaluation-counter';
import { EvaluateService } from './evaluate/evaluate.service';
import { FlagEvents } from './flag-events';
import { FlagImportService } from './flag-import.service';
import { FlagLimits } from './flag-limits';
import { FlagStreamController } from './flag-stream.controller';
import { FlagStreams } from './flag-streams';
import { FlagsController } from './flags.controller';
import { FlagProblems } from './flags.errors';
import { FlagsRepository, SqlFlagsRepository } from './flags.repository';
import { FlagsService } from './flags.service';

/** Tenant-environments whose flags are held in memory; the least recently evaluated is dropped past it (and past FLAG_STORE_MAX_BYTES). */
const MAX_HELD_SETS = 1000;
/** A held set is compared with Postgres this often (fingerprints, no jsonb): it heals a lost change announcement. */
const RECONCILE_MS = 15_000;

@Module({
  imports: [ProjectsModule, EnvironmentsModule],
  // Segments live here with the flags: the import writes both in one transaction, and a segment change goes out on the flags' feed.
  // Change requests and schedules too: they write through FlagsService's rules in their own transactions.
  controllers: [FlagsController, FlagStreamController, SegmentsController, FlagChangesController],
  providers: [
    { provide: FlagsRepository, useClass: SqlFlagsRepository },
    { provide: SegmentsRepository, useClass: SqlSegmentsRepository },
    SegmentsService,
    { provide: FlagChangesRepository, useClass: SqlFlagChangesRepository },
    ChangeRequestsService,
    ScheduledChangesService,
    ScheduledChangesRunner,
    FlagLimits,
    FlagsService,
    FlagImportService,
    EvaluateService,
    FlagStoreRepository,
    {
      provide: FlagStore,
      inject: [FlagStoreRepository, PUBSUB, APP_CONFIG],
      useFactory: (repository: FlagStoreRepository, pubsub: PubSub, config: ManagementApiConfig) =>
        new FlagStore(repository, pubsub, {
          reconcileMs: RECONCILE_MS,
          maxEntries: MAX_HELD_SETS,
          maxFlagBytes: config.FLAG_MAX_BYTES,
          maxSetBytes: config.FLAG_SET_MAX_BYTES,
          maxBytes: config.FLAG_STORE_MAX_BYTES,
          // The flag-data stream sends the held JSON (no copy of its own).
          keepJson: true,
          // Evaluations and flag streams of a refused set answer this, and the replica stays up.
          tooLargeError: (refusal) =>
            new ProblemException(
              FlagProblems['flag-set-too-large'],
              `The flags of environment ${refusal.environment} take ${refusal.bytes} bytes, over the ${refusal.limit} one environment's flags may take; they are not evaluated until flags are made smaller or deleted.`,
              { bytes: refusal.bytes, limit: refusal.limit },
            ),
        }),
    },
    FlagStreams,
    FlagEvents,
    EvaluationsRepository,
    {
      provide: EvaluationRecorder,
      inject: [EvaluationsRepository, HttpMetrics, APP_CONFIG],
      useFactory: (writes: EvaluationsRepository, metrics: HttpMetrics, config: ManagementApiConfig) =>
        new EvaluationRecorder(writes, { maxPerFlush: config.EVALUATIONS_RECORDED_PER_FLUSH, registry: [metrics.registry] }),
    },
    EvaluationCounter,
  ],
  exports: [FlagsService, FlagStore],
})
export class FlagsModule {}
