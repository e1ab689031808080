import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { http } from './http';

/** A free TCP port on loopback. */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

/** Polls until `probe` resolves truthy, or fails after `timeoutMs`. */
export async function waitFor<T>(probe: () => Promise<T | undefined | false>, timeoutMs = 10000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await probe();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`condition not met within ${timeoutMs} ms${last ? `: ${String(last)}` : ''}`);
}

/** A built app (its `main.js`) started as a process, as `npm start` and the image start it. */
export interface BuiltProcess {
  url: string;
  child: ChildProcess;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
}

/** Starts `main` on `port` (a free one by default) and waits until its /readyz answers 200; fails with its output if it exits first. */
export async function startBuiltProcess(main: string, env: NodeJS.ProcessEnv, port?: number): Promise<BuiltProcess> {
  port ??= await freePort();
  const child = spawn(process.execPath, [main], { env: { ...env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (out += c));
  const url = `http://127.0.0.1:${port}`;
  await waitFor(
    async () => {
      if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}: ${out}`);
      return (await http(`${url}/readyz`).catch(() => ({ status: 0 }))).status === 200;
    },
    30_000,
    100,
  );
  return { url, child, output: () => out };
}

/** A redis-server of a test's own, on a free port, that the test may stop and start again. */
export class DisposableRedis {
  private proc: ChildProcess | undefined;

  private constructor(readonly port: number) {}

  static async start(): Promise<DisposableRedis> {
    const r = new DisposableRedis(await freePort());
    await r.start();
    return r;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.proc = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
    });
    await waitFor(async () => {
      const { Socket } = await import('node:net');
      return new Promise<boolean>((resolve) => {
        const s = new Socket();
        s.once('error', () => resolve(false));
        s.connect(this.port, '127.0.0.1', () => {
          s.destroy();
          resolve(true);
        });
      });
    });
  }

  async stop(): Promise<void> {
    if (!this.proc || this.proc.exitCode !== null) return;
    const p = this.proc;
    p.kill('SIGKILL');
    await once(p, 'exit');
  }
}
