import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { CompiledFlagSet } from '@flagship/flag-evaluation';
import { CHANNELS, PUBSUB, type PubSub } from '@flagship/redis';
import { FlagsRepository } from './flags.repository';

const MAX_ENTRIES = 1000;
/** A missed invalidation heals after this long at worst. */
const TTL_MS = 15_000;

interface Entry {
  set: Promise<CompiledFlagSet>;
  loadedAt: number;
}

export interface FlagChangedMessage {
  tenantId: string;
  environment: string;
  flagKey: string;
  version: number;
}

/**
 * Compiled flag sets per tenant and environment, so evaluation does no query per call. Every
 * replica drops an entry when any replica announces a change on Redis (and after TTL_MS anyway).
 */
@Injectable()
export class FlagSnapshots implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('FlagSnapshots');
  private readonly entries = new Map<string, Entry>();
  private unsubscribe: (() => Promise<void>) | undefined;

  constructor(
    private readonly repo: FlagsRepository,
    @Inject(PUBSUB) private readonly pubsub: PubSub,
  ) {}

  async onModuleInit(): Promise<void> {
    try {
      this.unsubscribe = await this.pubsub.subscribe(CHANNELS.flagChanged, (m) => {
        const msg = m as Partial<FlagChangedMessage>;
        if (typeof msg.tenantId === 'string' && typeof msg.environment === 'string') this.invalidate(msg.tenantId, msg.environment);
      });
    } catch (err) {
      // Redis down at start: the TTL still bounds staleness.
      this.logger.warn(`flag change subscription failed: ${(err as Error).message}`);
    }
  }

  async onModuleDestroy(): Promise<void> {
    await this.unsubscribe?.().catch(() => undefined);
  }

  get(tenantId: string, environment: string): Promise<CompiledFlagSet> {
    const k = `${tenantId}/${environment}`;
    const hit = this.entries.get(k);
    if (hit && Date.now() - hit.loadedAt < TTL_MS) return hit.set;
    const set = this.repo.definitions(tenantId, environment).then((defs) => CompiledFlagSet.compile(defs));
    set.catch(() => this.entries.delete(k));
    this.entries.delete(k);
    this.entries.set(k, { set, loadedAt: Date.now() });
    if (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    return set;
  }

  invalidate(tenantId: string, environment: string): void {
    this.entries.delete(`${tenantId}/${environment}`);
  }
}
