/**
 * Issue 33's "same answers", the OFREP door: the data of launchdarkly-oracle.int-spec.ts's third part
 * (LaunchDarkly flags with kinds, contextTargets and segments) imported through POST
 * /api/flags/import, then evaluated by the built orep-server reading the same Postgres database,
 * tenant and environment, through POST /ofrep/v1/evaluate/flags/{key} with OpenFeature's flat
 * context (multi-kind as `kind: "multi"` with one object per kind), against LaunchDarkly's Node SDK
 * on the same data: the same value, variation (OFREP's variant is the variation id the import
 * stored) and reason (OpenFeature's names: a rollout served is SPLIT) with the rule matched.
 * orep-server is started as a process, as the image starts it (an app may not import another app's
 * AppModule: @nx/enforce-module-boundaries): needs `npx nx run orep-server:build` first.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LDClient } from '@launchdarkly/node-server-sdk';
import { type BuiltProcess, freePort, http, startBuiltProcess } from '@flagship/testing';
import { ManagementApiFixture, type SignedUp } from '../testing/management-api.fixture';
import { agreedEverywhere, compareEveryPair, ldAnswer, offlineClient, openFeatureContextOf, openFeatureReasonOfLd, SAME_ANSWERS, sameAnswersData } from './launchdarkly-oracle.fixture';

const MAIN = join(__dirname, '../../../../dist/apps/orep-server/apps/orep-server/src/main.js');
const TOKEN = 'same-answers-orep-token';

describe("the same answers through OFREP: LaunchDarkly data imported, evaluated by orep-server from Postgres and by LaunchDarkly's SDK", () => {
  const { flags, segments, contexts, users, body } = sameAnswersData(SAME_ANSWERS.seed, SAME_ANSWERS.flags, SAME_ANSWERS.contexts);
  let f: ManagementApiFixture;
  let owner: SignedUp;
  let orep: BuiltProcess;
  let ldClient: LDClient;
  let dir: string;
  /** Index of a variation id in the flag as the import stored it. */
  let storedIndex: (key: string, id: string | undefined) => number | null;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ld-same-answers-ofrep-'));
    ldClient = await offlineClient(dir, flags, segments);
    f = await ManagementApiFixture.start();
    owner = await f.signUp();
    const imported = await f.call('POST', '/api/flags/import', { token: owner.idToken, tenant: owner.tenantId, json: body });
    if (imported.status !== 200) throw new Error(`import: ${imported.status} ${imported.text}`);
    const stored = new Map<string, string[]>(imported.body.flags.map((fl: { key: string; variations: Array<{ id: string }> }) => [fl.key, fl.variations.map((v) => v.id)]));
    storedIndex = (key, id) => (id === undefined ? null : stored.get(key)!.indexOf(id));
    // Started after the import: its first snapshot holds every flag, nothing to wait for on Redis.
    const port = await freePort();
    orep = await startBuiltProcess(
      MAIN,
      {
        ...f.te.env,
        NODE_ENV: 'test',
        LOG_LEVEL: 'warn',
        OREP_AUTH_TOKEN: TOKEN,
        OREP_TENANT_ID: owner.tenantId,
        OREP_ENVIRONMENT: 'production',
        OREP_PORT: String(port),
        METRICS_PORT: String(await freePort()),
      },
      port,
    );
  }, 60_000);
  afterAll(async () => {
    ldClient?.close();
    orep?.child.kill('SIGTERM');
    if (dir) rmSync(dir, { recursive: true, force: true });
    await f?.stop();
  });

  it('every (flag, context), multi-kind included, gets LaunchDarkly\'s value, variation and reason', async () => {
    const result = await compareEveryPair({ flags, contexts, users }, ldClient, async (fl, ctx, ld) => {
      const key = fl['key'] as string;
      const res = await http<any>(`${orep.url}/ofrep/v1/evaluate/flags/${key}`, { method: 'POST', json: { context: openFeatureContextOf(ctx) }, headers: { authorization: `Bearer ${TOKEN}` } });
      const expected = { ...ldAnswer(ld), reason: openFeatureReasonOfLd(ld, fl) };
      // OFREP's variant is the variation id; the rule is in its metadata.
      const rule = ld.reason.kind === 'RULE_MATCH' ? res.body.metadata : undefined;
      const got = res.status === 200 ? { value: res.body.value, index: storedIndex(key, res.body.variant), reason: res.body.reason, ruleId: rule?.ruleId, ruleIndex: rule?.ruleIndex } : { status: res.status, body: res.text };
      return { got, expected, reason: expected.reason };
    });
    // Every OpenFeature reason the data can give: targets, rules, rollouts, the default and off.
    expect(result).toEqual(agreedEverywhere({ flags, contexts, users }, ['DEFAULT', 'DISABLED', 'SPLIT', 'TARGETING_MATCH']));
  }, 60_000);
});
