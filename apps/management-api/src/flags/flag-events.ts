import { Inject, Injectable, Logger } from '@nestjs/common';
import { CHANNELS, type FlagChanged, PUBSUB, type PubSub } from '@flagship/redis';
import { FlagStore } from '@flagship/flag-store';

/** Announces committed flag changes on Redis so orep-server and other replicas learn at once. */
@Injectable()
export class FlagEvents {
  private readonly logger = new Logger('FlagEvents');

  constructor(
    @Inject(PUBSUB) private readonly pubsub: PubSub,
    private readonly store: FlagStore,
  ) {}

  async changed(tenantId: string, environments: string[], flagKey: string, version: number): Promise<void> {
    for (const environment of environments) {
      // This replica's evaluations wait for the re-read, so the writer reads its own change.
      this.store.invalidate(tenantId, environment, flagKey);
      const msg: FlagChanged = { tenantId, environment, flagKey, version };
      // The change is committed; a lost announcement is healed by the readers' periodic reconcile.
      await this.pubsub.publish(CHANNELS.flagChanged, msg).catch((err: Error) => this.logger.warn(`publish failed: ${err.message}`));
    }
  }

  /**
   * A segment changed in `environment`: on the flags' feed with `segmentKey` and no flag key; stores
   * re-read that segment (a store that knows no segments re-reads the whole set).
   */
  async segmentChanged(tenantId: string, environment: string, segmentKey: string, version: number): Promise<void> {
    this.store.invalidateSegment(tenantId, environment, segmentKey);
    const msg: FlagChanged = { tenantId, environment, segmentKey, version };
    await this.pubsub.publish(CHANNELS.flagChanged, msg).catch((err: Error) => this.logger.warn(`publish failed: ${err.message}`));
  }

  /** Many flags at once (an import): published together, not one round trip after another. */
  async changedMany(tenantId: string, changes: ReadonlyArray<{ environments: string[]; flagKey: string; version: number }>): Promise<void> {
    await Promise.all(changes.map((c) => this.changed(tenantId, c.environments, c.flagKey, c.version)));
  }
}
