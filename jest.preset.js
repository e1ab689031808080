// Shared Jest settings for every project. Tests are transpiled only (ts-jest isolatedModules):
// `npm run typecheck` does the type checking once for the whole tree, which keeps jest fast on 2 cores.
const path = require('node:path');
const { compilerOptions } = require('./tsconfig.base.json');

const root = __dirname;
const moduleNameMapper = {};
for (const [alias, [target]] of Object.entries(compilerOptions.paths)) {
  moduleNameMapper[`^${alias.replace('/', '\\/')}$`] = path.join(root, target);
}

// Packages published only as ES modules; jest's CommonJS runtime needs them transformed.
const esmOnly = ['jose', 'oauth4webapi', 'openai'];

/** @returns {import('jest').Config} */
module.exports = function projectConfig(dir) {
  return {
    displayName: path.relative(root, dir),
    rootDir: dir,
    testEnvironment: 'node',
    testMatch: ['<rootDir>/**/*.spec.ts', '<rootDir>/**/*.int-spec.ts', '<rootDir>/**/*.e2e-spec.ts'],
    transform: {
      '^.+\\.(t|mj|j)s$': [
        'ts-jest',
        {
          tsconfig: {
            ...compilerOptions,
            isolatedModules: true,
            module: 'commonjs',
            moduleResolution: 'node10',
            ignoreDeprecations: '6.0',
            allowJs: true,
            sourceMap: true,
            paths: undefined,
            rootDir: root,
          },
        },
      ],
    },
    transformIgnorePatterns: [`/node_modules/(?!(${esmOnly.join('|')})/)`],
    moduleNameMapper,
    moduleFileExtensions: ['ts', 'js', 'mjs', 'json'],
    testTimeout: 30000,
  };
};
