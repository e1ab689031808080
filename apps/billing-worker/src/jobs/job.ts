/**
 * A piece of background work billing-worker repeats. The scheduler runs each job in its own loop,
 * never two passes of one job at once in a process; jobs that must not overlap across replicas
 * arrange that in Postgres (row locks), not here.
 */
export interface Job {
  /** Names the job in logs and metrics (`usage-reconciler`). */
  readonly name: string;
  /** Pause between the end of one pass and the start of the next, when the pass left nothing to do. */
  readonly intervalMs: number;
  /**
   * One pass. Resolving `true` means there is more work: the next pass starts at once. A throw is
   * logged by the scheduler (once per run of failures) and retried with backoff; `signal` aborts when
   * the app shuts down, so a long pass can stop between batches.
   */
  run(signal: AbortSignal): Promise<boolean | void>;
}

/** The jobs the scheduler runs (a Nest provider holding `Job[]`). */
export const JOBS = Symbol('JOBS');
/** The longest wait between retries of a failing job, in ms (a Nest provider holding a number). */
export const JOB_MAX_BACKOFF_MS = Symbol('JOB_MAX_BACKOFF_MS');
