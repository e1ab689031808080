/**
 * In-process evaluation: the SDK's FlagshipInProcessProvider against LaunchDarkly's Node server SDK
 * (9.13.7), on the same flags and the same contexts, in one process and one run.
 *
 *   TS_NODE_PROJECT=tsconfig.json node -r ts-node/register/transpile-only -r tsconfig-paths/register \
 *     tools/bench/in-process.ts [secondsPerCase=3] [rounds=2]
 *
 * The flags are written once in LaunchDarkly's SDK data format. LaunchDarkly's client gets them
 * through its TestData source (`usePreconfiguredFlag`, no network, events off); ours are imported into
 * a management-api started in this process (POST /api/flags/import, on its own database) and the
 * provider downloads them over the flag-data stream, as in production. Before timing, every flag is
 * evaluated for 512 contexts by both and the values must agree.
 *
 * Like with like: both are called directly, each SDK's own evaluate-with-details call, awaited
 * (`provider.resolveBooleanEvaluation` and `ldClient.variationDetail`; both return promises). Our
 * provider through OpenFeature's client (`getBooleanDetails`) is reported besides, as is a baseline
 * (a Map lookup through an awaited async function) so the figures compare across machines.
 * Cases alternate per round; the best round of each is reported.
 */
import { init as initLaunchDarkly, integrations, basicLogger, type LDContext } from '@launchdarkly/node-server-sdk';
import { type EvaluationContext, OpenFeature } from '@openfeature/server-sdk';
import { FlagshipInProcessProvider } from '@flagship/sdk';
// A bench runs management-api's own test fixture in process: the app's module, not a lib.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { ManagementApiFixture } from '../../apps/management-api/src/testing/management-api.fixture';

const SECONDS = Number(process.argv[2] ?? 3);
const ROUNDS = Number(process.argv[3] ?? 2);
const FLAGS = 20;
const CONTEXTS = 4096;
const BATCH = 1024;

const COUNTRIES = ['FR', 'DE', 'US', 'GB', 'JP', 'BR', 'IN', 'ES'];
const PLANS = ['free', 'standard', 'premium'];

/** Ten rules per flag over several operators; most do not match, so an evaluation scans many before one does or it falls through to a rollout. */
function ldFlag(i: number): Record<string, unknown> {
  const rules = [
    { id: `c${i}`, clauses: [{ attribute: 'country', op: 'in', values: [`X${i}`, `Y${i}`, 'ZZ'], negate: false }], variation: 0 },
    { id: `p${i}`, clauses: [{ attribute: 'plan', op: 'in', values: ['premium'], negate: false }, { attribute: 'age', op: 'lessThan', values: [0], negate: false }], variation: 0 },
    { id: `e${i}`, clauses: [{ attribute: 'email', op: 'endsWith', values: [`@corp${i}.com`], negate: false }], variation: 1 },
    { id: `s${i}`, clauses: [{ attribute: 'email', op: 'startsWith', values: ['admin', 'root'], negate: false }], variation: 1 },
    { id: `v${i}`, clauses: [{ attribute: 'appVersion', op: 'semVerGreaterThan', values: ['9.0.0'], negate: false }], variation: 0 },
    { id: `a${i}`, clauses: [{ attribute: 'age', op: 'greaterThanOrEqual', values: [100 + i], negate: false }], variation: 0 },
    { id: `d${i}`, clauses: [{ attribute: 'createdAt', op: 'before', values: [1_000_000_000_000], negate: false }], variation: 1 },
    { id: `g${i}`, clauses: [{ attribute: 'groups', op: 'contains', values: [`nobody-${i}`], negate: false }], variation: 1 },
    // Matches a share of contexts: country and a rollout over the rule.
    { id: `m${i}`, clauses: [{ attribute: 'country', op: 'in', values: [COUNTRIES[i % COUNTRIES.length]], negate: false }], rollout: { variations: [{ variation: 0, weight: 50_000 }, { variation: 1, weight: 50_000 }] } },
    { id: `n${i}`, clauses: [{ attribute: 'plan', op: 'in', values: ['standard'], negate: true }, { attribute: 'age', op: 'lessThan', values: [30], negate: false }], variation: 0 },
  ];
  return {
    key: `flag-${i}`,
    version: 1,
    on: true,
    variations: [true, false],
    offVariation: 1,
    fallthrough: { rollout: { variations: [{ variation: 0, weight: 30_000 }, { variation: 1, weight: 70_000 }] } },
    targets: [{ values: ['vip-1', 'vip-2', `user-${i * 7919}`], variation: 0 }],
    rules,
    prerequisites: [],
    salt: `salt-${i}`,
    trackEvents: false,
    trackEventsFallthrough: false,
    deleted: false,
  };
}

interface Ctx {
  ours: EvaluationContext & { targetingKey: string };
  ld: LDContext;
}

function contexts(): Ctx[] {
  const out: Ctx[] = [];
  for (let i = 0; i < CONTEXTS; i++) {
    const attributes = {
      country: COUNTRIES[i % COUNTRIES.length]!,
      plan: PLANS[i % PLANS.length]!,
      email: `person${i}@example${i % 5}.com`,
      appVersion: `${1 + (i % 4)}.${i % 10}.${i % 7}`,
      age: 18 + (i % 60),
      createdAt: 1_700_000_000_000 + i * 3_600_000,
      groups: ['beta', `cohort-${i % 16}`],
    };
    const key = `user-${i * 7919}`;
    out.push({ ours: { targetingKey: key, ...attributes }, ld: { kind: 'user', key, ...attributes } });
  }
  return out;
}

async function measure(body: (flag: string, ctx: Ctx) => Promise<unknown>, keys: string[], ctxs: Ctx[], seconds = SECONDS): Promise<number> {
  const deadline = Date.now() + seconds * 1000;
  let n = 0;
  const start = process.hrtime.bigint();
  while (Date.now() < deadline) {
    for (let j = 0; j < BATCH; j++, n++) await body(keys[n % FLAGS]!, ctxs[n % ctxs.length]!);
  }
  return n / (Number(process.hrtime.bigint() - start) / 1e9);
}

async function main(): Promise<void> {
  const data = { flags: Object.fromEntries(Array.from({ length: FLAGS }, (_, i) => [`flag-${i}`, ldFlag(i)])) };
  const keys = Object.keys(data.flags);
  const ctxs = contexts();

  // LaunchDarkly: the same SDK data, preconfigured, events and diagnostics off.
  const td = new integrations.TestData();
  for (const flag of Object.values(data.flags)) await td.usePreconfiguredFlag(flag);
  const ld = initLaunchDarkly('sdk-bench-key', { updateProcessor: td.getFactory(), sendEvents: false, diagnosticOptOut: true, logger: basicLogger({ level: 'none' }) });
  await ld.waitForInitialization({ timeout: 10 });

  // Ours: imported into a management-api, downloaded over the flag-data stream.
  const f = await ManagementApiFixture.start({ RATE_LIMIT_FREE: '100000' });
  try {
    const owner = await f.signUp();
    const imported = await f.call('POST', '/api/flags/import', { token: owner.idToken, tenant: owner.tenantId, json: data });
    if (imported.status !== 200) throw new Error(`import: ${imported.status} ${imported.text}`);
    const client = (await f.call('POST', '/api/oauth/clients', { token: owner.idToken, tenant: owner.tenantId, json: { name: 'bench', scopes: ['flags:read'] } })).body;
    const loadStart = Date.now();
    const provider = new FlagshipInProcessProvider({ baseUrl: f.url, auth: { clientId: client.clientId, clientSecret: client.clientSecret } });
    await OpenFeature.setProviderAndWait('bench', provider);
    const loadMs = Date.now() - loadStart;
    const ofClient = OpenFeature.getClient('bench');

    // Equivalent flags: both give the same value for every flag and 512 contexts.
    let agree = 0;
    for (const key of keys) {
      for (const ctx of ctxs.slice(0, 512)) {
        const mine = await provider.resolveBooleanEvaluation(key, false, ctx.ours);
        const theirs = await ld.variationDetail(key, ctx.ld, false);
        if (mine.value !== theirs.value) throw new Error(`${key} for ${ctx.ours.targetingKey}: ours ${mine.value}, LaunchDarkly ${String(theirs.value)} (${JSON.stringify(theirs.reason)})`);
        agree++;
      }
    }

    const map = new Map(keys.map((k) => [k, true]));
    const baseline = async (key: string) => map.get(key);
    const cases: Array<[string, (key: string, ctx: Ctx) => Promise<unknown>]> = [
      ['baseline: Map lookup in an async function', (key) => baseline(key)],
      ['flagship provider.resolveBooleanEvaluation', (key, ctx) => provider.resolveBooleanEvaluation(key, false, ctx.ours)],
      ['launchdarkly ldClient.variationDetail', (key, ctx) => ld.variationDetail(key, ctx.ld, false)],
      ['flagship via OpenFeature getBooleanDetails', (key, ctx) => ofClient.getBooleanDetails(key, false, ctx.ours)],
    ];
    const best = new Map<string, number>();
    for (const [, body] of cases) await measure(body, keys, ctxs, 0.5); // warm-up
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, body] of cases) best.set(name, Math.max(best.get(name) ?? 0, await measure(body, keys, ctxs)));
    }

    console.log(`node ${process.version}; ${FLAGS} flags of 10 rules, targets and a rollout; ${CONTEXTS} contexts; ${SECONDS} s per case, best of ${ROUNDS} rounds`);
    console.log(`values agree for ${agree} evaluations; the provider loaded the flags over the stream in ${loadMs} ms (token + put)\n`);
    const base = best.get(cases[0]![0])!;
    const ldRate = best.get(cases[2]![0])!;
    console.log(`${'case'.padEnd(46)} ${'evals/s'.padStart(12)} ${'vs baseline'.padStart(12)} ${'vs LaunchDarkly'.padStart(16)}`);
    for (const [name] of cases) {
      const rate = best.get(name)!;
      console.log(`${name.padEnd(46)} ${Math.round(rate).toLocaleString('en-US').padStart(12)} ${(rate / base).toFixed(3).padStart(12)} ${(rate / ldRate).toFixed(2).padStart(15)}x`);
    }
    await OpenFeature.close();
  } finally {
    ld.close();
    await f.stop();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
