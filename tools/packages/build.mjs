#!/usr/bin/env node
// Builds the packages a customer installs from libs/sdk's own source (two entry points, no copy of it):
// each into dist/packages/<dir>/ (ESM .mjs, CommonJS .cjs, one bundled .d.ts for each), then `npm pack`
// puts its tarball in dist/packages/. esbuild bundles the JavaScript (the evaluator and the client code
// the provider streams with go inside: no path into this repository survives); rollup-plugin-dts
// bundles the declarations the same way. Run by `nx run sdk:package` (and `npm run build`).
//   node tools/packages/build.mjs [--no-pack]
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { rollup } from 'rollup';
import { dts } from 'rollup-plugin-dts';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
export const OUT = join(ROOT, 'dist/packages');

/** The published packages: where each manifest (package.json, README, CHANGELOG) lives, and its entry point. */
export const PACKAGES = [
  { dir: 'sdk', manifest: 'libs/sdk', entry: 'libs/sdk/src/sdk.package.ts' },
  { dir: 'openfeature-provider', manifest: 'libs/sdk/openfeature-provider', entry: 'libs/sdk/src/openfeature-provider.package.ts' },
];
/** The OpenAPI surface the version was made against (tools/packages/api-surface.ts), shipped in each package. */
export const API_SURFACE = 'libs/sdk/api-surface.json';

const readJson = (file) => JSON.parse(readFileSync(join(ROOT, file), 'utf8'));

/** The tarball `npm pack` makes of a manifest: `@scope/name` 1.2.3 -> scope-name-1.2.3.tgz. */
export function tarballName(manifest) {
  return `${manifest.name.replace(/^@/, '').replace('/', '-')}-${manifest.version}.tgz`;
}

async function buildPackage(pkg) {
  const manifest = readJson(`${pkg.manifest}/package.json`);
  const out = join(OUT, pkg.dir);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(join(out, 'dist'), { recursive: true });
  const external = [...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})];
  const banner = `// ${manifest.name} ${manifest.version}`;

  for (const [format, ext] of [['esm', 'mjs'], ['cjs', 'cjs']]) {
    await build({
      entryPoints: [join(ROOT, pkg.entry)],
      outfile: join(out, 'dist', `index.${ext}`),
      bundle: true,
      platform: 'node',
      target: 'node20',
      format,
      external,
      // tsconfig.base.json's paths resolve @flagship/flag-evaluation and @flagship/domain into the bundle.
      tsconfig: join(ROOT, 'tsconfig.base.json'),
      // Bundling renames clashing identifiers; error classes and the provider keep their own names.
      keepNames: true,
      banner: { js: banner },
      logLevel: 'warning',
    });
  }

  const bundle = await rollup({
    input: join(ROOT, pkg.entry),
    external,
    plugins: [dts({ tsconfig: join(ROOT, 'tsconfig.base.json'), compilerOptions: { declaration: true, emitDecoratorMetadata: false } })],
    onwarn: (warning) => {
      throw new Error(`${manifest.name} declarations: ${warning.message}`);
    },
  });
  const { output } = await bundle.generate({ format: 'es', banner });
  await bundle.close();
  const declarations = output[0].code;
  // The same declarations serve both conditions; .d.mts and .d.cts tell TypeScript which module kind each describes.
  writeFileSync(join(out, 'dist/index.d.mts'), declarations);
  writeFileSync(join(out, 'dist/index.d.cts'), declarations);

  for (const file of ['dist/index.mjs', 'dist/index.cjs', 'dist/index.d.mts']) checkImports(manifest, external, join(out, file));

  writeFileSync(join(out, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  for (const file of ['README.md', 'CHANGELOG.md']) copyFileSync(join(ROOT, pkg.manifest, file), join(out, file));
  copyFileSync(join(ROOT, API_SURFACE), join(out, 'api-surface.json'));
  return { manifest, out };
}

/** A bundle may import only Node's own modules and the package's declared dependencies: anything else would fail on a customer's machine. */
function checkImports(manifest, external, file) {
  const text = readFileSync(file, 'utf8');
  const allowed = new Set([...external, ...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);
  const specifiers = [...text.matchAll(/(?:from\s+|require\(|import\()\s*["']([^"']+)["']/g)].map((m) => m[1]);
  const stray = specifiers.filter((s) => !s.startsWith('.') && !allowed.has(s) && ![...allowed].some((a) => s.startsWith(`${a}/`)));
  if (stray.length > 0) throw new Error(`${manifest.name}: ${file} imports ${[...new Set(stray)].join(', ')}, which the package does not declare`);
}

async function main() {
  const pack = !process.argv.includes('--no-pack');
  const { SDK_VERSION_FILE, sdkVersion } = sdkVersionInSource();
  for (const pkg of PACKAGES) {
    const { manifest, out } = await buildPackage(pkg);
    // The User-Agent and the manifests say the same version (both packages are released together).
    if (manifest.version !== sdkVersion) throw new Error(`${pkg.manifest}/package.json is ${manifest.version} but ${SDK_VERSION_FILE} says ${sdkVersion}`);
    if (pack) {
      execFileSync('npm', ['pack', '--silent', '--pack-destination', OUT], { cwd: out, stdio: ['ignore', 'ignore', 'inherit'] });
      process.stdout.write(`${manifest.name}@${manifest.version}: dist/packages/${tarballName(manifest)}\n`);
    } else {
      process.stdout.write(`${manifest.name}@${manifest.version}: dist/packages/${pkg.dir}/\n`);
    }
  }
}

function sdkVersionInSource() {
  const SDK_VERSION_FILE = 'libs/sdk/src/flagship.client.ts';
  const match = /export const SDK_VERSION = '([^']+)'/.exec(readFileSync(join(ROOT, SDK_VERSION_FILE), 'utf8'));
  if (!match) throw new Error(`no SDK_VERSION in ${SDK_VERSION_FILE}`);
  return { SDK_VERSION_FILE, sdkVersion: match[1] };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    process.stderr.write(`${err.stack ?? err}\n`);
    process.exit(1);
  });
}
