import type { FlagSourceMode } from '../env.schema';
import type { FlagSnapshot } from '@flagship/flag-evaluation';

/** Injection token of the app's one FlagSource. */
export const FLAG_SOURCE = Symbol('FLAG_SOURCE');

/** What /readyz tells about a source, besides whether it has a snapshot. */
export interface FlagSourceStatus {
  kind: FlagSourceMode;
  /** When the flags being served last changed (ISO 8601), if any are loaded. */
  loadedAt?: string;
  /** When the source last confirmed them current (Postgres mode's full re-sync). */
  syncedAt?: string;
  /** How long the last full load took (read, parse, validate, compile), in ms. */
  lastFullLoadMs?: number;
  /** The last failure to load or refresh, while the previous snapshot keeps being served. */
  lastError?: { at: string; message: string };
  /** Anything else worth showing (file path, tenant, environment...). */
  [detail: string]: unknown;
}

/**
 * Where the flags come from. A source keeps a compiled snapshot and swaps it whole when the flags
 * change; the evaluation paths read `snapshot` on every request and never wait on I/O.
 */
export interface FlagSource {
  /** null only until the first successful load. */
  readonly snapshot: FlagSnapshot | null;
  status(): FlagSourceStatus;
}
