import { Module } from '@nestjs/common';
import { FlagStore, FlagStoreRepository } from '@flagship/flag-store';
import { PUBSUB, type PubSub } from '@flagship/redis';
import { EnvironmentsModule } from '../environments/environments.module';
import { ProjectsModule } from '../projects/projects.module';
import { EvaluationCounter } from './evaluation-counter';
import { FlagEvents } from './flag-events';
import { FlagStreamController } from './flag-stream.controller';
import { FlagStreams } from './flag-streams';
import { FlagsController } from './flags.controller';
import { FlagsRepository } from './flags.repository';
import { FlagsService } from './flags.service';

/** Tenant-environments whose flags are held in memory; the least recently evaluated is dropped past it. */
const MAX_HELD_SETS = 1000;
/** A held set is compared with Postgres this often (fingerprints, no jsonb): it heals a lost change announcement. */
const RECONCILE_MS = 15_000;

@Module({
  imports: [ProjectsModule, EnvironmentsModule],
  controllers: [FlagsController, FlagStreamController],
  providers: [
    FlagsRepository,
    FlagsService,
    FlagStoreRepository,
    {
      provide: FlagStore,
      inject: [FlagStoreRepository, PUBSUB],
      useFactory: (repository: FlagStoreRepository, pubsub: PubSub) => new FlagStore(repository, pubsub, { reconcileMs: RECONCILE_MS, maxEntries: MAX_HELD_SETS }),
    },
    FlagStreams,
    FlagEvents,
    EvaluationCounter,
  ],
  exports: [FlagsService, FlagsRepository, FlagStore],
})
export class FlagsModule {}
