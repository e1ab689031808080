#!/usr/bin/env node
// Publishes @flagship/sdk and @flagship/openfeature-provider to an npm registry:
//   NPM_TOKEN=... node tools/packages/release.mjs --registry https://npm.example.com/ [--tag latest] [--access public]
//   node tools/packages/release.mjs --dry-run [--registry URL]     everything but the upload; needs no token
// It refuses unless the work tree is clean (dry runs excepted), each CHANGELOG has a section for the
// version, and the version check passes (tools/packages/api-surface.spec.ts: no breaking change to the
// OpenAPI document without a major version, and with RELEASE_CHECK the recorded API surface is this
// version's, of the current document). Then it builds and packs both (tools/packages/build.mjs) and publishes the
// tarballs, the token in a temporary npmrc of its own, never on a command line.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { API_SURFACE, OUT, PACKAGES, ROOT, tarballName } from './build.mjs';

const { values: args } = parseArgs({
  options: {
    registry: { type: 'string' },
    tag: { type: 'string', default: 'latest' },
    access: { type: 'string' },
    'dry-run': { type: 'boolean', default: false },
  },
});
const dryRun = args['dry-run'];

function fail(message) {
  process.stderr.write(`release: ${message}\n`);
  process.exit(1);
}

function sh(cmd, argv, options = {}) {
  return execFileSync(cmd, argv, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], ...options });
}

if (!args.registry && !dryRun) fail('--registry URL is required (the registry to publish to)');
if (args.registry && !/^https?:\/\//.test(args.registry)) fail(`--registry must be an http(s) URL, got ${args.registry}`);
if (!process.env.NPM_TOKEN && !dryRun) fail('NPM_TOKEN is not set (a token allowed to publish to the registry)');
if (args.access && !['public', 'restricted'].includes(args.access)) fail('--access is public or restricted');

const manifests = PACKAGES.map((pkg) => ({ pkg, manifest: JSON.parse(readFileSync(join(ROOT, pkg.manifest, 'package.json'), 'utf8')) }));
const version = manifests[0].manifest.version;
for (const { pkg, manifest } of manifests) {
  if (manifest.version !== version) fail(`${pkg.manifest}/package.json is ${manifest.version}, not ${version}: both packages are released together`);
  const changelog = readFileSync(join(ROOT, pkg.manifest, 'CHANGELOG.md'), 'utf8');
  if (!new RegExp(`^## ${version.replaceAll('.', '\\.')}\\b`, 'm').test(changelog)) fail(`${pkg.manifest}/CHANGELOG.md has no "## ${version}" section`);
}

const dirty = sh('git', ['status', '--porcelain']).trim();
if (dirty && !dryRun) fail(`the work tree has uncommitted changes; release from a commit:\n${dirty}`);

// The version check as CI runs it, and (RELEASE_CHECK) that the record is this version's, of the current document.
try {
  sh('npx', ['jest', '--ci', 'tools/packages/api-surface.spec.ts'], { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, UPDATE_API_SURFACE: '', RELEASE_CHECK: '1' } });
} catch {
  fail(`the version check failed (above); a stale ${API_SURFACE} is re-recorded with UPDATE_API_SURFACE=1 npx jest tools/packages/api-surface.spec.ts`);
}

sh(process.execPath, ['tools/packages/build.mjs'], { stdio: ['ignore', 'inherit', 'inherit'] });

const registry = args.registry ? args.registry.replace(/\/?$/, '/') : undefined;
const npmrcDir = mkdtempSync(join(tmpdir(), 'flagship-release-'));
const published = [];
let failed;
try {
  const userconfig = join(npmrcDir, '.npmrc');
  // The registry's auth key is its URL without the scheme (`//npm.example.com/:_authToken`); npm reads ${NPM_TOKEN} from the environment.
  writeFileSync(userconfig, registry ? `${registry.replace(/^https?:/, '')}:_authToken=\${NPM_TOKEN}\n` : '', { mode: 0o600 });
  for (const { manifest } of manifests) {
    const tarball = join(OUT, tarballName(manifest));
    const argv = ['publish', tarball, '--userconfig', userconfig, '--tag', args.tag];
    if (registry) argv.push('--registry', registry);
    if (args.access) argv.push('--access', args.access);
    // A dry run asks no registry anything (npm would look the package up, and retry for a minute when it cannot).
    if (dryRun) argv.push('--dry-run', '--offline');
    process.stdout.write(`${dryRun ? '[dry run] ' : ''}npm ${argv.join(' ')}\n`);
    try {
      sh('npm', argv, { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, NPM_TOKEN: process.env.NPM_TOKEN ?? '' } });
    } catch {
      failed = manifest.name;
      break;
    }
    published.push(`${manifest.name}@${version}`);
  }
} finally {
  rmSync(npmrcDir, { recursive: true, force: true });
}
// A release stopped halfway says what is already out: that version of it cannot be published again, only the rest.
if (failed) fail(`npm publish of ${failed}@${version} failed (above); ${published.length > 0 ? `already published: ${published.join(', ')}` : 'nothing was published'}`);
process.stdout.write(`${dryRun ? 'dry run: would have published' : 'published'} ${manifests.map(({ manifest }) => `${manifest.name}@${version}`).join(' and ')}${registry ? ` to ${registry}` : ''}\n`);
