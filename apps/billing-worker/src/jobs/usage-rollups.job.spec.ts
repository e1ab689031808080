import type { TransactionRunner } from '@flagship/persistence';
import { inlineTransactions } from '@flagship/persistence/testing';
import type { UsageRollupsRepository } from '@flagship/ledger';
import type { BillingWorkerConfig } from '../env.schema';
import { UsageRollupsJob } from './usage-rollups.job';

/** A compaction that merges what is left, `batchSize` at most per call (the repository's contract). */
const deltasLeft = (n: number) => {
  const calls: number[] = [];
  const repo = {
    compact: async (_m: unknown, batchSize: number) => {
      const merged = Math.min(n, batchSize);
      n -= merged;
      calls.push(merged);
      return merged;
    },
  };
  return { repo: repo as unknown as UsageRollupsRepository, calls };
};

const config = { USAGE_ROLLUP_INTERVAL_S: 10, USAGE_ROLLUP_BATCH_SIZE: 100 } as BillingWorkerConfig;

describe('UsageRollupsJob', () => {
  it('asks to run again at once while batches come back full, and waits its interval once one is short', async () => {
    const { repo, calls } = deltasLeft(250);
    const job = new UsageRollupsJob(inlineTransactions as TransactionRunner, repo, config);
    expect(job.intervalMs).toBe(10_000);
    expect([await job.run(), await job.run(), await job.run()]).toEqual([true, true, false]);
    expect(calls).toEqual([100, 100, 50]);
  });

  it('waits when another replica holds the compaction (the repository merged nothing)', async () => {
    const { repo } = deltasLeft(0);
    expect(await new UsageRollupsJob(inlineTransactions as TransactionRunner, repo, config).run()).toBe(false);
  });
});
