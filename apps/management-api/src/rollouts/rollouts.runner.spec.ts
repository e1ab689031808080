import { RolloutRunner } from './rollouts.runner';
import type { RolloutStep, RolloutsService } from './rollouts.service';

/** A service whose runNext answers `steps`, then null, counting its calls. */
function rollouts(steps: Array<RolloutStep | null>) {
  const calls = { n: 0 };
  const runNext = async () => {
    calls.n++;
    return steps.shift() ?? null;
  };
  return { svc: { runNext } as unknown as RolloutsService, calls };
}
const step = (productKey: string): RolloutStep => ({ tenantId: 't', productKey, decision: 'held', reason: 'r' });

describe('RolloutRunner', () => {
  it('runs passes back to back while each decided something, then waits a poll; shutdown ends it', async () => {
    const r = rollouts([step('a'), step('b')]);
    const runner = new RolloutRunner(r.svc, { SCHEDULED_CHANGES_POLL_MS: 10_000 });
    runner.onApplicationBootstrap();
    for (const end = Date.now() + 3000; r.calls.n < 3 && Date.now() < end; ) await new Promise((ok) => setTimeout(ok, 5));
    await runner.beforeApplicationShutdown();
    expect(r.calls.n).toBe(3); // two decisions, the third pass found none: then the poll, cut short by shutdown
  });

  it('SCHEDULED_CHANGES_POLL_MS=0 leaves this replica out: no pass runs', async () => {
    const r = rollouts([step('a')]);
    const runner = new RolloutRunner(r.svc, { SCHEDULED_CHANGES_POLL_MS: 0 });
    runner.onApplicationBootstrap();
    await new Promise((ok) => setTimeout(ok, 20));
    await runner.beforeApplicationShutdown();
    expect(r.calls.n).toBe(0);
  });
});
