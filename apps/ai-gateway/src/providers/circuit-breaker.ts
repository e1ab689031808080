/**
 * A circuit breaker for one provider: after `failureThreshold` consecutive failures it opens and
 * refuses calls for `cooldownMs`, so a dead upstream costs the client no time-out and the upstream
 * no load; then it lets one probe through (half-open): success closes it, failure opens it again.
 */
export type BreakerState = 'closed' | 'open' | 'half-open';

export class CircuitBreaker {
  private failures = 0;
  private openedAt = 0;
  private state_: BreakerState = 'closed';
  private probeInFlight = false;

  constructor(
    private readonly failureThreshold: number,
    private readonly cooldownMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  get state(): BreakerState {
    return this.state_;
  }

  /** Whether a call may go out now; when it is the half-open probe, the caller must report its result. */
  tryPass(): boolean {
    if (this.state_ === 'closed') return true;
    if (this.state_ === 'open') {
      if (this.now() - this.openedAt < this.cooldownMs) return false;
      this.state_ = 'half-open';
    }
    if (this.probeInFlight) return false;
    this.probeInFlight = true;
    return true;
  }

  onSuccess(): void {
    this.failures = 0;
    this.probeInFlight = false;
    this.state_ = 'closed';
  }

  onFailure(): void {
    this.probeInFlight = false;
    this.failures++;
    if (this.state_ === 'half-open' || this.failures >= this.failureThreshold) {
      this.state_ = 'open';
      this.openedAt = this.now();
    }
  }

  /** A call that ended neither way (the client left): a half-open probe slot is freed for the next one. */
  release(): void {
    this.probeInFlight = false;
  }
}
