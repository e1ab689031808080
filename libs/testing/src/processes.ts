import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { http } from './http';

const children = new Set<ChildProcess>();
let exitHook = false;

/**
 * A process a test started is killed when the test process exits, whatever the test did: jest runs
 * with --forceExit, and a spec whose afterAll failed or timed out left its app running (a built
 * management-api outlived a failed CI run by an hour, holding its database's connections).
 */
export function killOnExit(child: ChildProcess): void {
  if (!exitHook) {
    exitHook = true;
    process.once('exit', () => children.forEach((c) => c.kill('SIGKILL')));
  }
  children.add(child);
  child.once('exit', () => children.delete(child));
}

/**
 * A free TCP port on loopback for a server a test starts later (often in another process). Taken below
 * the kernel's ephemeral range, in a slice of its own per jest worker, one after another from a random
 * start: a port from `listen(0)` is an ephemeral one, which the kernel may hand to another worker's
 * `listen(0)` or an outgoing connection before the app binds it. CI saw that: a replica's health check
 * answered by another test's app on the same port (404 "No route" for the route the replica had).
 */
export async function freePort(): Promise<number> {
  if (SLICE !== undefined) {
    for (let tried = 0; tried < SLICE.size; tried++) {
      SLICE.next = (SLICE.next + 1) % SLICE.size;
      const port = SLICE.first + SLICE.next;
      if (await canListen(port)) return port;
    }
  }
  return listenOnAnyPort();
}

/** This process's ports: below the ephemeral range, the slice of its jest worker (0 outside jest); none when the range leaves no room. */
const SLICE = ((): { first: number; size: number; next: number } | undefined => {
  const slices = 16;
  const first = 10000;
  let ephemeralLow = 32768;
  try {
    ephemeralLow = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || ephemeralLow;
  } catch {
    // Not Linux: its default.
  }
  const size = Math.floor((ephemeralLow - first) / slices);
  if (size < 100) return undefined;
  const worker = Number(process.env['JEST_WORKER_ID'] ?? 0) % slices;
  return { first: first + worker * size, size, next: Math.floor(Math.random() * size) };
})();

async function canListen(port: number): Promise<boolean> {
  const server = createServer();
  server.listen(port, '127.0.0.1');
  // once(server, 'listening') would reject on 'error': one listener for each outcome instead.
  const listening = await new Promise<boolean>((resolve) => {
    server.once('listening', () => resolve(true));
    server.once('error', () => resolve(false));
  });
  if (!listening) return false;
  server.close();
  await once(server, 'close');
  return true;
}

async function listenOnAnyPort(): Promise<number> {
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
  killOnExit(child);
  let out = '';
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (out += c));
  const url = `http://127.0.0.1:${port}`;
  let ready = 0;
  await waitFor(
    async () => {
      if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}: ${out}`);
      ready = (await http(`${url}/readyz`).catch(() => ({ status: 0 }))).status;
      return ready === 200;
    },
    30_000,
    100,
  ).catch((err: Error) => {
    // Not ready in time: what it last answered and printed say why.
    child.kill('SIGKILL');
    throw new Error(`${err.message} (${main} on port ${port}, /readyz last ${ready}): ${out.slice(-4000)}`);
  });
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

export interface DisposablePostgresOptions {
  /** The server's certificate and key: TLS on, and TCP connections accepted only over TLS (pg_hba `hostssl`). */
  tls?: { certFile: string; keyFile: string };
  /** The `postgres` user's password, then required over TCP (SCRAM); unset, TCP is trusted. */
  password?: string;
}

/** Where `initdb` and `pg_ctl` are: TEST_PG_BIN, or PATH. */
const pgBin = (tool: 'initdb' | 'pg_ctl'): string => (process.env['TEST_PG_BIN'] ? `${process.env['TEST_PG_BIN']}/${tool}` : tool);

/**
 * A Postgres cluster of a test's own (initdb in a temporary directory, on a free loopback port,
 * trust authentication; or TLS only, with a password: DisposablePostgresOptions), that the test may
 * crash for real (`pg_ctl stop -m immediate`: no checkpoint, what was not flushed to the WAL is
 * gone, as when the machine loses power or the postmaster is killed) and start again (crash recovery replays the WAL). Postgres refuses to run as
 * root: run as root, the cluster belongs to the `postgres` user.
 */
export class DisposablePostgres {
  private constructor(
    readonly port: number,
    private readonly dir: string,
    private readonly owner: { uid: number; gid: number } | undefined,
    private readonly options: DisposablePostgresOptions,
  ) {}

  /** initdb (about 0.6 s) and start. */
  static async start(options: DisposablePostgresOptions = {}): Promise<DisposablePostgres> {
    const { mkdtempSync, chownSync, copyFileSync, chmodSync, writeFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { execFileSync } = await import('node:child_process');
    const dir = mkdtempSync(join(tmpdir(), 'flagship-pg-'));
    let owner: { uid: number; gid: number } | undefined;
    if (process.getuid?.() === 0) {
      owner = { uid: Number(execFileSync('id', ['-u', 'postgres']).toString()), gid: Number(execFileSync('id', ['-g', 'postgres']).toString()) };
      chownSync(dir, owner.uid, owner.gid);
    }
    const own = (file: string, mode: number) => {
      chmodSync(file, mode);
      if (owner) chownSync(file, owner.uid, owner.gid);
    };
    const pg = new DisposablePostgres(await freePort(), dir, owner, options);
    const initdb = ['-D', pg.data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--no-locale'];
    if (options.password !== undefined) {
      writeFileSync(join(dir, 'pwfile'), `${options.password}\n`);
      own(join(dir, 'pwfile'), 0o600);
      initdb.push(`--pwfile=${join(dir, 'pwfile')}`);
    }
    await pg.ctl(pgBin('initdb'), initdb);
    if (options.tls) {
      // The server's key must belong to the server's user and be private (Postgres refuses it otherwise).
      copyFileSync(options.tls.certFile, join(dir, 'server.crt'));
      copyFileSync(options.tls.keyFile, join(dir, 'server.key'));
      own(join(dir, 'server.crt'), 0o644);
      own(join(dir, 'server.key'), 0o600);
      // TCP only over TLS (a plain connection finds no pg_hba entry); the socket, which pg_ctl -w probes, stays open.
      const auth = options.password !== undefined ? 'scram-sha-256' : 'trust';
      writeFileSync(join(pg.data, 'pg_hba.conf'), `local all all trust\nhostssl all all 127.0.0.1/32 ${auth}\n`);
    }
    await pg.start();
    return pg;
  }

  private get data(): string {
    return `${this.dir}/data`;
  }

  /** The `postgres` database; `urlFor(name)` for another. */
  get url(): string {
    return this.urlFor('postgres');
  }

  /** `host`: another name for 127.0.0.1 (say `localhost`, to connect by a name the server certificate may not hold). */
  urlFor(database: string, host = '127.0.0.1'): string {
    const password = this.options.password !== undefined ? `:${encodeURIComponent(this.options.password)}` : '';
    return `postgres://postgres${password}@${host}:${this.port}/${database}`;
  }

  /** Starts (or, after crash(), recovers) the cluster; resolves once it accepts connections. */
  async start(): Promise<void> {
    let options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1`;
    if (this.options.tls) options += ` -c ssl=on -c ssl_cert_file=${this.dir}/server.crt -c ssl_key_file=${this.dir}/server.key`;
    await this.ctl(pgBin('pg_ctl'), ['-D', this.data, '-l', `${this.dir}/log`, '-w', '-t', '60', '-o', options, 'start']);
  }

  /** An immediate shutdown: every backend killed at once, no checkpoint; start() then runs crash recovery. */
  async crash(): Promise<void> {
    await this.ctl(pgBin('pg_ctl'), ['-D', this.data, '-m', 'immediate', '-w', 'stop']);
  }

  /** Stops the cluster (if running) and deletes its directory. */
  async destroy(): Promise<void> {
    await this.ctl(pgBin('pg_ctl'), ['-D', this.data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
    const { rmSync } = await import('node:fs');
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** The server's log so far, for a failing test's message. */
  async log(): Promise<string> {
    const { readFileSync } = await import('node:fs');
    try {
      return readFileSync(`${this.dir}/log`, 'utf8');
    } catch {
      return '';
    }
  }

  private async ctl(tool: string, args: string[]): Promise<void> {
    const child = spawn(tool, args, { ...this.owner, cwd: this.dir, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (c) => (out += c));
    child.stderr!.on('data', (c) => (out += c));
    const [code] = (await once(child, 'exit')) as [number | null];
    if (code !== 0) throw new Error(`${tool} ${args.join(' ')} exited ${code}: ${out}`);
  }
}
