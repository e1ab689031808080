/** A dependency /readyz checks: resolves when healthy, rejects with the reason otherwise. */
export interface ReadinessCheck {
  readonly name: string;
  check(): Promise<void>;
}
