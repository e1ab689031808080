/**
 * management-api -> Postgres + Redis -> orep-server, with both built apps started as processes
 * (as `npm start` runs them): each of 200 PATCHes becomes visible in the remote evaluation server.
 * How soon is tools/bench/flag-propagation.ts's figure (p99 within 100 ms on a quiet machine); the
 * bounds here are generous (2 s for any change, 1 s at p99), so a busy CI machine does not fail it
 * while a lost or polled-for change still does.
 */
import { propagationDelays, quantile, startPropagationStack, type PropagationStack } from './flag-propagation';

describe('flag changes reach orep-server', () => {
  let stack: PropagationStack;

  beforeAll(async () => {
    stack = await startPropagationStack();
  }, 60000);

  afterAll(async () => stack?.stop());

  it('shows each of 200 PATCHes, in order, each within 2 s', async () => {
    expect(await stack.orepValue()).toBe(0);
    const delays = await propagationDelays(stack, 200, 2000);
    expect(delays).toHaveLength(200);
    console.log(`PATCH -> orep-server visible: p50 ${quantile(delays, 0.5).toFixed(1)} ms, p99 ${quantile(delays, 0.99).toFixed(1)} ms, max ${quantile(delays, 1).toFixed(1)} ms`);
    expect(quantile(delays, 0.99)).toBeLessThan(1000);
  }, 120000);
});
