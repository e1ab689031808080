import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { http, waitFor } from '@flagship/testing';

const ROOT = join(__dirname, '../../..');

// A bare platform app (no stores) started as a process, from the sources, logging as in production.
const PROBE = `
require('reflect-metadata');
const { Module } = require('@nestjs/common');
const { commonEnv, loadConfig, portEnv } = require('@flagship/config');
const { startService } = require('@flagship/service-kit');
const { platformModules } = require('@flagship/platform');
const config = loadConfig(process.env, { ...commonEnv, ...portEnv(0) });
class LogProbe {}
Module({})(LogProbe);
startService(config, { module: LogProbe, imports: platformModules(config, { serviceName: 'log-probe', withoutStores: true }) })
  .then((app) => process.stderr.write('listening ' + app.getHttpServer().address().port + '\\n'));
`;

describe('request ids in the access log (a started app)', () => {
  let child: ChildProcess;
  let out = '';
  let url: string;

  beforeAll(async () => {
    child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', '-r', 'tsconfig-paths/register', '-e', PROBE], {
      cwd: ROOT,
      env: { ...process.env, TS_NODE_PROJECT: join(ROOT, 'tsconfig.json'), NODE_ENV: 'test', LOG_LEVEL: 'info', PORT: undefined, METRICS_PORT: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stdout!.on('data', (c) => (out += c));
    child.stderr!.on('data', (c) => (err += c));
    const port = await waitFor(async () => {
      if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}: ${err}`);
      return /listening (\d+)/.exec(err)?.[1];
    }, 60_000, 100);
    url = `http://127.0.0.1:${port}`;
  }, 70_000);

  afterAll(async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  });

  it("logs the server's request id as req.id and the caller's x-request-id beside it as req.clientRequestId", async () => {
    const res = await http(`${url}/no/such/route`, { headers: { 'x-request-id': 'caller-chosen-1' } });
    const id = res.headers.get('x-request-id');
    expect([res.status, res.body.instance, res.headers.get('x-client-request-id')]).toEqual([404, id, 'caller-chosen-1']);
    const line = await waitFor(
      async () =>
        out
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as { req?: { id?: string; clientRequestId?: string; url?: string } })
          .find((l) => l.req?.url === '/no/such/route'),
      10_000,
      50,
    );
    expect(line.req).toMatchObject({ id, clientRequestId: 'caller-chosen-1' });
    expect(id).not.toBe('caller-chosen-1');
  });
});
