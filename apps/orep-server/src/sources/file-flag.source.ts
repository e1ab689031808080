import { createHash } from 'node:crypto';
import { type FSWatcher, watch } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { ConfigError } from '@flagship/config';
import { type FlagFile, type FlagFileBounds, type LazyFlagFile, readFlagFile } from './flag-file';
import { type FlagSource, type FlagSourceStatus, FlagsChangedListeners, type FlagsChangedListener } from './flag-source';
import { LiveFlagSet } from '@flagship/flag-evaluation';

export interface FileFlagSourceOptions {
  path: string;
  /** When set, a file naming another tenant is refused. */
  tenantId?: string;
  /** Quiet time after the last change event before reading (editors write in several steps). */
  debounceMs?: number;
  /** Safety net for missed watch events (network file systems, a replaced directory). */
  pollMs?: number;
  /** The bytes each flag and all of them may take (OREP_FLAG_MAX_BYTES, OREP_FLAG_SET_MAX_BYTES); default none. */
  bounds?: FlagFileBounds;
}

/**
 * A file larger than this many times the flags' bound is not read at all: room for the envelope,
 * indentation and fields evaluation ignores, not for a file that could only be refused after
 * taking its size in memory.
 */
const FILE_BYTES_PER_FLAG_BYTE = 4;

/**
 * Flags from a JSON file (flag-file.ts), watched. The directory is watched rather than the file:
 * editors and `mv` replace the file by renaming another over it, which a watch on the old file
 * (its inode) would never see. A file that does not parse or validate is refused as a whole and the
 * flags already loaded keep being served; the refusal is logged and shown in /readyz.
 */
export class FileFlagSource implements FlagSource, OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('FileFlagSource');
  private readonly path: string;
  private current: LiveFlagSet | null = null;
  private meta: Omit<FlagFile, 'flags'> | undefined;
  private lastDigest = '';
  private lastStat = '';
  private lastFullLoadMs: number | undefined;
  private lastError: { at: string; message: string } | undefined;
  private watcher: FSWatcher | undefined;
  private debounce: NodeJS.Timeout | undefined;
  private poll: NodeJS.Timeout | undefined;
  private reloading: Promise<void> | undefined;
  private reloadAgain = false;
  private stopped = false;

  constructor(private readonly options: FileFlagSourceOptions) {
    this.path = resolve(options.path);
  }

  private readonly listeners = new FlagsChangedListeners();

  onChange(listener: FlagsChangedListener): () => void {
    return this.listeners.add(listener);
  }

  get liveSet(): LiveFlagSet | null {
    return this.current;
  }

  /**
   * The first load must succeed: a server started on a broken file would have nothing to serve.
   * A ConfigError, so main.ts stops with one line, as for any other bad setting.
   */
  async onModuleInit(): Promise<void> {
    const outcome = await this.load();
    if (outcome instanceof Error) throw new ConfigError(`invalid configuration: OREP_FLAGS_FILE ${this.path} ${outcome.message}`);
    const file = basename(this.path);
    this.watcher = watch(dirname(this.path), { persistent: false }, (_event, name) => {
      // Some platforms give no file name; then any change in the directory may be ours.
      if (name === null || name === file) this.schedule();
    });
    this.watcher.on('error', (err) => this.logger.error(`watching ${this.path} failed: ${err.message}; polling only`));
    const pollMs = this.options.pollMs ?? 2000;
    this.poll = setInterval(() => void this.pollOnce(), pollMs);
    this.poll.unref();
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    this.watcher?.close();
    clearTimeout(this.debounce);
    clearInterval(this.poll);
  }

  status(): FlagSourceStatus {
    return {
      kind: 'file',
      path: this.path,
      flags: this.current?.size ?? 0,
      segments: this.current?.segmentCount ?? 0,
      ...(this.meta?.tenantId !== undefined ? { tenantId: this.meta.tenantId } : {}),
      ...(this.meta?.environment !== undefined ? { environment: this.meta.environment } : {}),
      ...(this.meta?.generatedAt !== undefined ? { generatedAt: this.meta.generatedAt } : {}),
      ...(this.current ? { loadedAt: new Date(this.current.updatedAt).toISOString() } : {}),
      ...(this.lastFullLoadMs !== undefined ? { lastFullLoadMs: this.lastFullLoadMs } : {}),
      ...(this.lastError ? { lastError: this.lastError } : {}),
    };
  }

  /** Reads the file again now; resolves when done. Reloads requested meanwhile run once more after. */
  reload(): Promise<void> {
    if (this.reloading) {
      this.reloadAgain = true;
      return this.reloading;
    }
    this.reloading = (async () => {
      try {
        do {
          this.reloadAgain = false;
          await this.load();
        } while (this.reloadAgain && !this.stopped);
      } finally {
        this.reloading = undefined;
      }
    })();
    return this.reloading;
  }

  private schedule(): void {
    if (this.stopped) return;
    clearTimeout(this.debounce);
    this.debounce = setTimeout(() => void this.reload(), this.options.debounceMs ?? 50);
  }

  private async pollOnce(): Promise<void> {
    try {
      const s = await stat(this.path);
      if (`${s.ino}:${s.size}:${s.mtimeMs}` !== this.lastStat) this.schedule();
    } catch {
      // Missing for a moment while being replaced; the watch or the next poll catches the new file.
    }
  }

  /** One attempt: the new set is swapped in, or the error is logged and returned. */
  private async load(): Promise<Error | undefined> {
    const started = performance.now();
    let text: string;
    try {
      const s = await stat(this.path);
      this.lastStat = `${s.ino}:${s.size}:${s.mtimeMs}`;
      const maxFileBytes = FILE_BYTES_PER_FLAG_BYTE * (this.options.bounds?.maxSetBytes ?? Infinity);
      if (s.size > maxFileBytes) return this.refuse(`is ${s.size} bytes, over the ${maxFileBytes} a flag file may be (${FILE_BYTES_PER_FLAG_BYTE} times OREP_FLAG_SET_MAX_BYTES); not read`);
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      return this.refuse(`cannot be read (${err instanceof Error ? err.message : String(err)})`);
    }
    // Watchers fire for writes that change nothing (touch, a save without edits): skip the work.
    const digest = createHash('sha1').update(text).digest('hex');
    if (digest === this.lastDigest && this.current) return undefined;
    let file: LazyFlagFile;
    try {
      file = readFlagFile(text, this.options.bounds);
    } catch (err) {
      return this.refuse(err instanceof Error ? err.message : String(err));
    }
    const expectedTenant = this.options.tenantId;
    if (expectedTenant && file.tenantId !== undefined && file.tenantId.toLowerCase() !== expectedTenant) {
      return this.refuse(`holds the flags of tenant ${file.tenantId}, not of OREP_TENANT_ID ${expectedTenant}`);
    }
    const previous = this.current;
    const next = LiveFlagSet.ofTexts(file.flags);
    // Segments compiled with the flags, in the new set before it is swapped in: segmentMatch evaluates as in Postgres mode.
    next.applySegments(file.segments ?? [], []);
    this.current = next;
    this.meta = { version: file.version, tenantId: file.tenantId, environment: file.environment, generatedAt: file.generatedAt };
    this.lastDigest = digest;
    this.lastError = undefined;
    this.lastFullLoadMs = Math.round(performance.now() - started);
    this.listeners.emit({ keys: undefined, at: this.current.updatedAt });
    this.logger.log(
      `${previous ? 'reloaded' : 'loaded'} ${this.current.size} flags from ${this.path} in ${this.lastFullLoadMs} ms`,
    );
    return undefined;
  }

  private refuse(message: string): Error {
    this.lastError = { at: new Date().toISOString(), message };
    if (this.current) {
      this.logger.error(`flag file ${this.path} refused, still serving the ${this.current.size} flags loaded before: ${message}`);
    }
    return new Error(message);
  }
}
