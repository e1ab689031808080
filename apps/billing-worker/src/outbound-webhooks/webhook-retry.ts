/** When a failed delivery is tried again (WEBHOOK_RETRY_*), and when it is given up. */
export interface RetryPolicy {
  /** The wait after the first failure; each further failure doubles it. */
  baseMs: number;
  /** The longest wait between two attempts. */
  maxDelayMs: number;
  /** How long after the event a delivery is still tried, and how long a receiver may fail before it is disabled. */
  windowMs: number;
}

/**
 * After failed attempt number `attempt` (1 for the first) of a delivery made at `createdAt`: the
 * time of the next attempt, or undefined when it would fall outside the window (given up). A little
 * jitter (`random`, 0 to 1, up to a tenth of the wait) keeps many deliveries failing together from
 * returning together.
 */
export function nextAttemptAt(attempt: number, createdAt: Date, now: Date, policy: RetryPolicy, random = Math.random()): Date | undefined {
  const delay = Math.min(policy.baseMs * 2 ** Math.min(Math.max(attempt - 1, 0), 30), policy.maxDelayMs);
  const at = now.getTime() + delay + Math.floor(delay * 0.1 * random);
  return at > createdAt.getTime() + policy.windowMs ? undefined : new Date(at);
}
