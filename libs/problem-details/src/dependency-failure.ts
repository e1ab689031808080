/**
 * Recognises the errors that mean "a store cannot be reached right now" (Postgres or Redis down,
 * restarting, a pool that cannot get a connection in time), as thrown by pg, pg-pool, TypeORM and
 * ioredis, so every app answers them with a 503 and Retry-After instead of a 500. Duck-typed on
 * purpose: this lib depends on none of those drivers.
 */
export interface DependencyFailure {
  /** The readiness check's name of the store: `postgres`, `redis`, or undefined when the error does not say. */
  dependency: 'postgres' | 'redis' | undefined;
  /** A short reason for the log line (never sent to clients). */
  reason: string;
}

/** Seconds a client is asked to wait before retrying after a dependency failure. */
export const DEPENDENCY_RETRY_AFTER_S = 2;

/** Socket-level failures: the peer refused, reset, vanished or could not be resolved. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNABORTED']);

/**
 * SQLSTATEs of an unavailable server rather than a bad query: connection exceptions (08), too many
 * connections, shutting down or starting up, and a statement cancelled by statement_timeout.
 */
const POSTGRES_UNAVAILABLE = /^(08...|53300|57P01|57P02|57P03|57014)$/;

/** pg and pg-pool's own messages for a connection lost, refused or timed out. */
const PG_MESSAGES = [
  /^Connection terminated/,
  /^timeout exceeded when trying to connect$/,
  /^Query read timeout$/,
  /^Client has encountered a connection error and is not queryable$/,
  /^Client was closed and is not queryable$/,
];

/** ioredis' messages for a command that could not be sent or answered. */
const REDIS_MESSAGES = [
  /^Stream isn't writeable and enableOfflineQueue options is false$/,
  /^Reached the max retries per request limit/,
  /^Connection is closed\.$/,
  /^Command timed out$/,
];

interface ErrorLike {
  name?: unknown;
  message?: unknown;
  code?: unknown;
  driverError?: unknown;
  cause?: unknown;
}

export function dependencyFailureOf(err: unknown, depth = 0): DependencyFailure | undefined {
  if (typeof err !== 'object' || err === null || depth > 3) return undefined;
  const e = err as ErrorLike;
  const message = typeof e.message === 'string' ? e.message : '';
  const code = typeof e.code === 'string' ? e.code : undefined;
  if (e.name === 'MaxRetriesPerRequestError' || REDIS_MESSAGES.some((m) => m.test(message))) {
    return { dependency: 'redis', reason: message };
  }
  // TypeORM wraps the driver's error (QueryFailedError) and copies its code: look at the driver's.
  if (e.driverError !== undefined) return dependencyFailureOf(e.driverError, depth + 1);
  if (code !== undefined && POSTGRES_UNAVAILABLE.test(code) && typeof (err as { severity?: unknown }).severity === 'string') {
    return { dependency: 'postgres', reason: `${code} ${message}` };
  }
  if (PG_MESSAGES.some((m) => m.test(message))) return { dependency: 'postgres', reason: message };
  if (code !== undefined && NETWORK_CODES.has(code)) return { dependency: undefined, reason: `${code} ${message}` };
  return e.cause !== undefined ? dependencyFailureOf(e.cause, depth + 1) : undefined;
}

/**
 * Told of every request answered 503 because of a dependency failure; the service kit's outage log
 * implements it (one line when an outage starts, one when it ends). Optional: without it the
 * filter says nothing.
 */
export interface DependencyOutageListener {
  onDependencyFailure(failure: DependencyFailure): void;
}

export const DEPENDENCY_OUTAGE_LISTENER = Symbol('DEPENDENCY_OUTAGE_LISTENER');
