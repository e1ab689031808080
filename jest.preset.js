// Shared Jest settings for every project. Tests are transpiled only, by swc (a third less CPU than
// ts-jest's isolatedModules, docs/decisions/2026-11-29-jest-swc.md): `npm run typecheck` does the type
// checking once for the whole tree.
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

/** The testMatch of `dirs` (globs under <rootDir>) for the layer TEST_KIND picks. */
function testMatchUnder(...dirs) {
  return dirs.flatMap((d) => suffixes.map((s) => `<rootDir>/${d}/**/*.${s}.ts`));
}

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
  return {
    displayName: path.relative(root, dir),
    rootDir: dir,
    testEnvironment: 'node',
    testMatch: testMatchUnder('.'),
    transform: swcTransform,
    transformIgnorePatterns: [`/node_modules/(?!(${esmOnly.join('|')})/)`],
    moduleNameMapper,
    moduleFileExtensions: ['ts', 'js', 'mjs', 'json'],
    testTimeout: 30000,
  };
};
module.exports.testMatchUnder = testMatchUnder;
