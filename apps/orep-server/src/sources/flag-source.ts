import type { FlagSourceMode } from '../env.schema';
import type { LiveFlagSet } from '@flagship/flag-evaluation';

/** Injection token of the app's one FlagSource. */
export const FLAG_SOURCE = Symbol('FLAG_SOURCE');

/** What /readyz tells about a source, besides whether it has flags loaded. */
export interface FlagSourceStatus {
  kind: FlagSourceMode;
  /** When the flags being served last changed (ISO 8601), if any are loaded. */
  loadedAt?: string;
  /** When the source last confirmed them current (Postgres mode's full re-sync). */
  syncedAt?: string;
  /** How long the last full load took (read, parse, validate, compile), in ms. */
  lastFullLoadMs?: number;
  /** The last failure to load or refresh, while the flags loaded before keep being served. */
  lastError?: { at: string; message: string };
  /** Anything else worth showing (file path, tenant, environment...). */
  [detail: string]: unknown;
}

/** What changed in the flags being served: these keys (changed, added or removed), or any of them. */
export interface FlagsChanged {
  /** undefined: a whole new set (first load, file reload), so any flag may differ. */
  keys: readonly string[] | undefined;
  /** When the change was applied (ms since the epoch); the live set's `updatedAt`. */
  at: number;
}

export type FlagsChangedListener = (change: FlagsChanged) => void;

/** The listeners of one source; a throwing listener is isolated from the others and from the source. */
export class FlagsChangedListeners {
  private readonly listeners = new Set<FlagsChangedListener>();

  add(listener: FlagsChangedListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(change: FlagsChanged): void {
    for (const l of this.listeners) {
      try {
        l(change);
      } catch {
        // A listener's failure is its own.
      }
    }
  }
}

/**
 * Where the flags come from. A source keeps a LiveFlagSet (each flag compiled on first use): the file
 * source swaps in a new one per reload, the Postgres source holds the flag store's one, which the store
 * changes in place a batch at a time; the evaluation paths read `liveSet` on every request and never
 * wait on I/O.
 */
export interface FlagSource {
  /** null only until the first successful load. */
  readonly liveSet: LiveFlagSet | null;
  status(): FlagSourceStatus;
  /**
   * `listener` runs after every change to `liveSet` is applied (synchronously after it, so what it
   * reads is the changed set). Returns the unsubscribe.
   */
  onChange(listener: FlagsChangedListener): () => void;
  /**
   * Notes that `flagKey` was evaluated (the stale-flags list): the Postgres source records it for
   * its tenant-environment off the hot path; a file or embedded source has no tenant flags to mark.
   */
  evaluated?(flagKey: string): void;
}
