import { ScheduledChangesRunner } from './scheduled-changes.runner';
import type { Execution, ScheduledChangesService } from './scheduled-changes.service';

/** A service whose executeNext answers the queue given, then null; a thrown Error is thrown. */
function service(queue: Array<Execution | Error | null>) {
  let calls = 0;
  const executeNext = async (): Promise<Execution | null> => {
    calls++;
    const next = queue.shift() ?? null;
    if (next instanceof Error) throw next;
    return next;
  };
  return { svc: { executeNext } as unknown as ScheduledChangesService, calls: () => calls };
}
const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(ok: () => boolean, ms = 3000): Promise<void> {
  for (const end = Date.now() + ms; !ok(); await tick(5)) if (Date.now() > end) throw new Error('timed out');
}

describe('ScheduledChangesRunner', () => {
  it('drains what is due at once, then polls; a failing pass is retried; shutdown ends the loop', async () => {
    const s = service([{ id: 'a', state: 'applied' }, { id: 'b', state: 'failed', reason: 'conflict' }, null, new Error('postgres down'), null]);
    const runner = new ScheduledChangesRunner(s.svc, { SCHEDULED_CHANGES_POLL_MS: 200 });
    runner.onApplicationBootstrap();
    await until(() => s.calls() >= 3);
    expect(s.calls()).toBe(3); // two executed back to back, the third found nothing: then it waits a poll
    await until(() => s.calls() >= 5); // polled and failed, backed off, polled again
    await runner.beforeApplicationShutdown();
    const after = s.calls();
    await tick(60);
    expect(s.calls()).toBe(after);
  });

  it('SCHEDULED_CHANGES_POLL_MS=0 leaves this replica out', async () => {
    const s = service([{ id: 'a', state: 'applied' }]);
    const runner = new ScheduledChangesRunner(s.svc, { SCHEDULED_CHANGES_POLL_MS: 0 });
    runner.onApplicationBootstrap();
    await tick(20);
    await runner.beforeApplicationShutdown();
    expect(s.calls()).toBe(0);
  });
});
