import { Logger, type OnModuleInit } from '@nestjs/common';
import exampleFlags from '../../flags.example.json';
import { validateFlagFile } from './flag-file';
import { type FlagSource, type FlagSourceStatus, type FlagsChangedListener } from './flag-source';
import { LiveFlagSet } from '@flagship/flag-evaluation';

/**
 * The example flags built into the app (apps/orep-server/flags.example.json), served when neither
 * OREP_FLAGS_FILE nor OREP_TENANT_ID is set, outside production only (env.schema.ts refuses it
 * there). Not watched: to edit them, point OREP_FLAGS_FILE at a copy.
 */
export class EmbeddedFlagSource implements FlagSource, OnModuleInit {
  private readonly logger = new Logger('EmbeddedFlagSource');
  private current: LiveFlagSet | null = null;
  private loadMs = 0;

  get liveSet(): LiveFlagSet | null {
    return this.current;
  }

  onModuleInit(): void {
    const started = performance.now();
    this.current = LiveFlagSet.of(validateFlagFile(exampleFlags).flags);
    this.loadMs = Math.round(performance.now() - started);
    this.logger.warn(
      `serving the ${this.current.size} built-in example flags (set OREP_FLAGS_FILE or OREP_TENANT_ID to serve real ones)`,
    );
  }

  /** The built-in flags never change. */
  onChange(_listener: FlagsChangedListener): () => void {
    return () => undefined;
  }

  status(): FlagSourceStatus {
    return {
      kind: 'embedded',
      flags: this.current?.size ?? 0,
      ...(this.current ? { loadedAt: new Date(this.current.updatedAt).toISOString(), lastFullLoadMs: this.loadMs } : {}),
    };
  }
}
