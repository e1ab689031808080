/**
 * The cost of one tenant's writes with 2,000 flags, against the real Postgres and Redis of the
 * machine (management-api in this process, on its own database): a LaunchDarkly import creating
 * 2,000 flags, the same import replacing them, then PATCH + the first evaluation after it (which
 * waits for the changed flag to be re-read), as medians.
 *
 *   TS_NODE_PROJECT=tsconfig.json node -r ts-node/register/transpile-only -r tsconfig-paths/register \
 *     tools/bench/flag-writes.ts [flags] [patches]
 *
 * Prints milliseconds, the statements management-api sent to Postgres and how long the import's
 * transaction held its connection (both through TypeORM's query hook).
 */
import type { DataSource } from 'typeorm';
import { DATA_SOURCE } from '@flagship/persistence';
// A bench runs management-api's own test fixture in process: the app's module, not a lib.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { ManagementApiFixture } from '../../apps/management-api/src/testing/management-api.fixture';

const N = Number(process.argv[2] ?? 2000);
const PATCHES = Number(process.argv[3] ?? 20);

const sdkData = (round: number) => {
  const flags: Record<string, unknown> = {};
  for (let i = 0; i < N; i++) {
    const key = `bulk-${String(i).padStart(4, '0')}`;
    flags[key] = {
      key,
      version: round,
      on: true,
      variations: ['a', 'b', 'c'],
      offVariation: 2,
      fallthrough: { rollout: { variations: [{ variation: 0, weight: 40000 }, { variation: 1, weight: 60000 }], seed: i } },
      targets: [{ values: [`user-${i}`], variation: 1 }],
      rules: [{ id: `r${i}`, clauses: [{ attribute: 'plan', op: 'in', values: [`plan-${round}`] }], variation: 0 }],
      prerequisites: i === 0 ? [] : [{ key: 'bulk-0000', variation: 0 }],
      salt: `salt-${i}`,
    };
  }
  return { flags };
};

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const f = await ManagementApiFixture.start({ LOG_LEVEL: 'warn', DATABASE_QUERY_TIMEOUT_MS: '600000' });
  try {
    const owner = await f.signUp();
    const as = { token: owner.idToken, tenant: owner.tenantId };
    const ds = f.svc.app.get<DataSource>(DATA_SOURCE);
    let statements = 0;
    // The longest transaction of the request: how long it held a pool connection.
    let began = 0;
    let held = 0;
    const original = ds.logger.logQuery.bind(ds.logger);
    ds.logger.logQuery = (...args: Parameters<typeof original>) => {
      statements++;
      if (/^START TRANSACTION/.test(args[0])) began = performance.now();
      if (/^(COMMIT|ROLLBACK)/.test(args[0])) held = Math.max(held, performance.now() - began);
      return original(...args);
    };
    const timed = async (label: string, work: () => Promise<{ status: number }>) => {
      statements = 0;
      held = 0;
      const started = performance.now();
      const res = await work();
      const ms = performance.now() - started;
      if (res.status !== 200) throw new Error(`${label}: ${res.status}`);
      console.log(`${label}: ${ms.toFixed(0)} ms, ${statements} statements, its transaction held a connection ${held.toFixed(0)} ms`);
    };
    await timed(`import creating ${N} flags`, () => f.call('POST', '/api/flags/import', { ...as, json: sdkData(1) }));
    await timed(`import replacing ${N} flags`, () => f.call('POST', '/api/flags/import', { ...as, json: sdkData(2) }));

    const evaluate = () => f.call('POST', '/api/flags/bulk-0500/evaluate', { ...as, json: { userId: 'nobody' } });
    await evaluate();
    const patchMs: number[] = [];
    const firstEvalMs: number[] = [];
    const warmEvalMs: number[] = [];
    for (let i = 0; i < PATCHES; i++) {
      let started = performance.now();
      const patched = await f.call('PATCH', '/api/flags/bulk-0500', { ...as, json: { enabled: i % 2 === 0 } });
      patchMs.push(performance.now() - started);
      started = performance.now();
      const first = await evaluate();
      firstEvalMs.push(performance.now() - started);
      if (patched.status !== 200 || first.body.enabled !== (i % 2 === 0)) throw new Error('the evaluation after the PATCH did not see it');
      started = performance.now();
      await evaluate();
      warmEvalMs.push(performance.now() - started);
    }
    console.log(
      `${N} flags, medians of ${PATCHES}: PATCH ${median(patchMs).toFixed(1)} ms, first evaluation after it ${median(firstEvalMs).toFixed(1)} ms, the next one ${median(warmEvalMs).toFixed(1)} ms`,
    );
  } finally {
    await f.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
