import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FlagDefinition } from '@flagship/flag-evaluation';
import { type RunningApp, startTestApp } from '@flagship/service-kit';
import { http, waitFor } from '@flagship/testing';
import { AppModule } from '../app.module';
import { loadOrepServerConfig } from '../env.schema';
import { installFastPath } from '../fast-path/install-fast-path';

/** File mode through the real app: edits are picked up, a bad file changes nothing. */

const TOKEN = 'file-test-token';

const numberFlag = (key: string, value: number): FlagDefinition => ({
  key,
  type: 'number',
  defaultValue: value,
  variations: [{ id: 'only', name: 'Only', value, weight: 0 }],
  enabled: true,
  targets: [],
  rules: [],
  prerequisites: [],
});

describe('file source', () => {
  let dir: string;
  let file: string;
  let svc: RunningApp;

  const write = (flags: unknown[], extra: Record<string, unknown> = {}) => writeFileSync(file, JSON.stringify({ version: 1, ...extra, flags }));
  const valueOf = async (key: string): Promise<unknown> => {
    const res = await http(`${svc.url}/ofrep/v1/evaluate/flags/${key}`, {
      method: 'POST',
      json: { context: { targetingKey: 'u1' } },
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    return res.status === 200 ? res.body.value : `status ${res.status}`;
  };
  const snapshotDetails = async () => (await http(`${svc.metricsUrl}/readyz`)).body.details.snapshot;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'orep-file-'));
    file = join(dir, 'flags.json');
    write([numberFlag('limit', 1)], { tenantId: '00000000-0000-4000-8000-00000000d3e0', environment: 'staging' });
    const config = loadOrepServerConfig({
      ...process.env,
      NODE_ENV: 'test',
      LOG_LEVEL: process.env['TEST_LOG_LEVEL'] ?? 'silent',
      OREP_AUTH_TOKEN: TOKEN,
      OREP_FLAGS_FILE: file,
      // Small bounds, so that a file can pass them.
      OREP_FLAG_MAX_BYTES: '2048',
      OREP_FLAG_SET_MAX_BYTES: '16384',
    });
    svc = await startTestApp(AppModule.forConfig(config), installFastPath);
  });

  afterAll(async () => {
    await svc?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves the file, and /readyz describes it', async () => {
    expect(await valueOf('limit')).toBe(1);
    expect(await snapshotDetails()).toMatchObject({
      status: 'up',
      kind: 'file',
      path: file,
      flags: 1,
      tenantId: '00000000-0000-4000-8000-00000000d3e0',
      environment: 'staging',
    });
  });

  it('picks up an edit written in place', async () => {
    write([numberFlag('limit', 2), numberFlag('added', 5)]);
    await waitFor(async () => (await valueOf('limit')) === 2, 5000, 20);
    expect(await valueOf('added')).toBe(5);
  });

  it('picks up a file replaced by a rename, as editors and deploy tools save', async () => {
    const tmp = join(dir, '.flags.json.tmp');
    writeFileSync(tmp, JSON.stringify({ version: 1, flags: [numberFlag('limit', 3)] }));
    renameSync(tmp, file);
    await waitFor(async () => (await valueOf('limit')) === 3, 5000, 20);
    expect(await valueOf('added')).toBe('status 404');
  });

  it('keeps the flags it has when the file turns bad, says why in /readyz, and recovers', async () => {
    writeFileSync(file, '{"version": 1, "flags": [ {"key": "limit", ');
    const broken = await waitFor(async () => {
      const s = await snapshotDetails();
      return s.lastError ? s : undefined;
    }, 5000, 20);
    expect(broken.status).toBe('up');
    expect(broken.lastError.message).toMatch(/not valid JSON/);
    expect(await valueOf('limit')).toBe(3);

    // Valid JSON, invalid flags: refused as a whole, naming the problem.
    write([numberFlag('limit', 4), { ...numberFlag('bad', 1), type: 'number', defaultValue: 'one' }]);
    await waitFor(async () => /flags\[1\]\.defaultValue/.test((await snapshotDetails()).lastError?.message ?? ''), 5000, 20);
    expect(await valueOf('limit')).toBe(3);

    write([numberFlag('limit', 5)]);
    await waitFor(async () => (await valueOf('limit')) === 5, 5000, 20);
    expect((await snapshotDetails()).lastError).toBeUndefined();
  });

  it('refuses a file with a flag over OREP_FLAG_MAX_BYTES, or flags over OREP_FLAG_SET_MAX_BYTES, and keeps serving what it had', async () => {
    const padded = (key: string, pad: number) => ({ ...numberFlag(key, 6), description: 'd'.repeat(pad) });
    const refusedWith = (pattern: RegExp) => waitFor(async () => pattern.test((await snapshotDetails()).lastError?.message ?? ''), 5000, 20);

    write([numberFlag('limit', 6), padded('huge', 3000)]);
    await refusedWith(/^1 problem\(s\): flags\[1\]: its definition takes \d+ bytes, over the 2048 a flag may take$/);
    expect([await valueOf('limit'), await valueOf('huge')]).toEqual([5, 'status 404']);

    // Ten flags of about 1.7 KB: each fits, together they do not.
    write(Array.from({ length: 10 }, (_, i) => padded(`f${i}`, 1500)));
    await refusedWith(/flags: take \d+ bytes, over the 16384 all flags may take$/);
    expect([await valueOf('limit'), await valueOf('f0')]).toEqual([5, 'status 404']);

    // Over four times the bound, the file is not even read.
    writeFileSync(file, JSON.stringify({ version: 1, flags: [numberFlag('limit', 7)], padding: ' '.repeat(4 * 16384) }));
    await refusedWith(/^is \d+ bytes, over the 65536 a flag file may be \(4 times OREP_FLAG_SET_MAX_BYTES\); not read$/);
    expect(await valueOf('limit')).toBe(5);

    write(Array.from({ length: 8 }, (_, i) => padded(`f${i}`, 1500)));
    await waitFor(async () => (await valueOf('f7')) === 6, 5000, 20);
    expect((await snapshotDetails()).lastError).toBeUndefined();
  });
});
