// Shared Jest settings for every project. Tests are transpiled only, by swc (a third less CPU than
// ts-jest's isolatedModules, docs/decisions/2026-11-29-jest-swc.md): `npm run typecheck` does the type
// checking once for the whole tree.
const fs = require('node:fs');
const path = require('node:path');
const { compilerOptions } = require('./tsconfig.base.json');

const root = __dirname;
const moduleNameMapper = {};
for (const [alias, [target]] of Object.entries(compilerOptions.paths)) {
  moduleNameMapper[`^${alias.replace('/', '\\/')}$`] = path.join(root, target);
}

// Packages published only as ES modules; jest's CommonJS runtime needs them transformed.
const esmOnly = ['jose', 'oauth4webapi', 'openai'];

// What a test file's suffix says it needs (STYLE.md): `*.spec.ts` no I/O, `*.int-spec.ts` real Postgres
// and Redis (or a spawned tool such as helm), `*.e2e-spec.ts` started apps. TEST_KIND picks one layer
// (the Nx targets test, int-test and e2e); unset, every layer runs.
const KINDS = { unit: 'spec', int: 'int-spec', e2e: 'e2e-spec' };
const kind = process.env.TEST_KIND;
if (kind !== undefined && kind !== '' && !(kind in KINDS)) throw new Error(`TEST_KIND must be one of ${Object.keys(KINDS).join(', ')} (got ${kind})`);
const suffixes = kind ? [KINDS[kind]] : Object.values(KINDS);

// Spec groups (TEST_GROUPS=1, set by `npm test`): the `*.int-spec.ts` files in a folder holding an
// `*.int-group.ts` (the `*.e2e-spec.ts` files, for an `*.e2e-group.ts`), and in its subfolders without
// a group file of their own for that layer, run inside that one jest file
// (libs/testing/src/spec-groups.ts), so their imports (the app module, TypeORM, Nest, Playwright) are
// evaluated once for the group instead of once per spec, and are not started on their own. Unset,
// every spec is its own file, as a developer runs one.
const GROUPED = process.env.TEST_GROUPS === '1';
/** The layers that have groups: a group file's suffix and its members'. */
const GROUP_LAYERS = [
  { group: 'int-group', member: KINDS.int },
  { group: 'e2e-group', member: KINDS.e2e },
].filter((l) => GROUPED && suffixes.includes(l.member));

/** The testMatch of `dirs` (globs under <rootDir>) for the layer TEST_KIND picks. */
function testMatchUnder(...dirs) {
  const groups = GROUP_LAYERS.flatMap((l) => dirs.map((d) => `<rootDir>/${d}/**/*.${l.group}.ts`));
  return [...dirs.flatMap((d) => suffixes.map((s) => `<rootDir>/${d}/**/*.${s}.ts`)), ...groups];
}

/** Each group file under `dir` (absolute path) with the spec files it runs. */
function specGroups(dir) {
  const groups = {};
  for (const { group: groupSuffix, member } of GROUP_LAYERS) {
    const walk = (folder, group) => {
      const entries = fs.readdirSync(folder, { withFileTypes: true });
      const own = entries.filter((e) => e.isFile() && e.name.endsWith(`.${groupSuffix}.ts`));
      if (own.length > 1) throw new Error(`${folder}: one *.${groupSuffix}.ts per folder (found ${own.map((e) => e.name).join(', ')})`);
      if (own.length === 1) {
        group = path.join(folder, own[0].name);
        groups[group] = [];
      }
      for (const e of entries) {
        if (e.isDirectory() && e.name !== 'node_modules') walk(path.join(folder, e.name), group);
        else if (group && e.isFile() && e.name.endsWith(`.${member}.ts`)) groups[group].push(path.join(folder, e.name));
      }
    };
    walk(dir, undefined);
  }
  return groups;
}
const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// The emit of tsconfig.base.json: ES2022 with [[Define]] class fields (as tsc does for that target),
// legacy decorators with their parameter types recorded, which NestJS's constructor injection reads.
function swc(syntax) {
  return [
    '@swc/jest',
    {
      swcrc: false,
      sourceMaps: 'inline',
      module: { type: 'commonjs' },
      jsc: {
        target: 'es2022',
        parser: syntax === 'typescript' ? { syntax, decorators: true } : { syntax },
        transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: true },
      },
    },
  ];
}
const swcTransform = { '^.+\\.ts$': swc('typescript'), '^.+\\.(mj|j)s$': swc('ecmascript') };

/** @returns {import('jest').Config} */
module.exports = function projectConfig(dir) {
  const groups = GROUPED ? specGroups(dir) : {};
  const grouped = Object.values(groups).flat();
  return {
    displayName: path.relative(root, dir),
    rootDir: dir,
    testEnvironment: 'node',
    testMatch: testMatchUnder('.'),
    testPathIgnorePatterns: ['/node_modules/', ...grouped.map((f) => `^${escapeRegExp(f)}$`)],
    // Read by runSpecGroup: which specs each group file runs.
    globals: { SPEC_GROUPS: groups },
    transform: swcTransform,
    transformIgnorePatterns: [`/node_modules/(?!(${esmOnly.join('|')})/)`],
    moduleNameMapper,
    moduleFileExtensions: ['ts', 'js', 'mjs', 'json'],
    testTimeout: 30000,
  };
};
module.exports.testMatchUnder = testMatchUnder;
