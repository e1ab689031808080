/**
 * A piece of background work billing-worker repeats. The scheduler runs each job on its own
 * interval, never two passes of one job at once in a process; jobs that must not overlap across
 * replicas arrange that in Postgres (row locks), not here.
 */
export interface Job {
  /** Names the job in logs and metrics (`usage-reconciler`). */
  readonly name: string;
  /** Pause between the end of one pass and the start of the next. */
  readonly intervalMs: number;
  /**
   * One pass. A throw is logged by the scheduler (once per run of failures) and the next tick
   * tries again; `signal` aborts when the app shuts down, so a long pass can stop between batches.
   */
  run(signal: AbortSignal): Promise<void>;
}

/** The jobs the scheduler runs (a Nest provider holding `Job[]`). */
export const JOBS = Symbol('JOBS');
