import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

// Test code: it may use @flagship/testing; production code may not.
const TEST_FILES = ['**/*.spec.ts', '**/*.int-spec.ts', '**/*.e2e-spec.ts', '**/*.fixture.ts', 'libs/testing/**/*.ts', 'tools/**/*.ts', '**/src/testing/**/*.ts'];
const FRAMEWORKS = ['@nestjs/*', 'typeorm', 'pg', 'ioredis', 'express', 'passport*'];

/**
 * Nx's rule, from the project tags. It needs the project graph, which only an Nx command caches
 * (`npm run lint` runs one first): a bare eslint skips it, so the no-restricted-imports rules below
 * say the same thing without a graph. "No @flagship/testing in production code" is theirs alone: a
 * project's graph edges include its specs' imports, so Nx cannot tell a spec's import from the code's.
 */
const MODULE_BOUNDARIES = {
  enforceBuildableLibDependency: false,
  allow: [],
  depConstraints: [
    { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:lib'] },
    { sourceTag: 'type:lib', onlyDependOnLibsWithTags: ['type:lib'] },
    // tools/ (dev scripts, chart and deploy checks, cross-app e2e): any lib, never an app.
    { sourceTag: 'type:tool', onlyDependOnLibsWithTags: ['type:lib'] },
    { sourceTag: 'scope:shared', onlyDependOnLibsWithTags: ['scope:shared'] },
    // The domain is the base: no other lib, no framework.
    { sourceTag: 'layer:base', notDependOnLibsWithTags: ['type:lib'], bannedExternalImports: FRAMEWORKS },
    // The evaluator stays pure: the domain only, no framework, no database.
    { sourceTag: 'kind:pure', onlyDependOnLibsWithTags: ['layer:base'], bannedExternalImports: FRAMEWORKS },
  ],
};

const PURE_MESSAGE = 'stays pure (STYLE.md): no framework, database or Redis client';

export default tseslint.config(
  { ignores: ['**/dist', '**/node_modules', '**/tmp', '**/coverage', '.nx/**', 'openapi/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    plugins: { '@nx': nx },
    rules: {
      '@nx/enforce-module-boundaries': ['error', MODULE_BOUNDARIES],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // No consistent-type-imports: Nest's DI reads constructor types from emitted metadata, and a
      // type-only import of an injected class would silently erase it.
      eqeqeq: ['error', 'always'],
      'no-console': 'error',
    },
  },
  {
    // Repositories own SQL: TypeORM (and the DataSource) stays in repositories, entities and the persistence lib.
    files: ['apps/**/*.ts'],
    ignores: ['apps/**/*.repository.ts', 'apps/**/*.entity.ts', 'apps/**/*.int-spec.ts', 'apps/**/*.e2e-spec.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            { name: 'typeorm', message: 'TypeORM belongs in *.repository.ts, *.entity.ts and libs/persistence.' },
            {
              name: '@flagship/persistence',
              importNames: ['DATA_SOURCE', 'DataSource', 'withTransaction'],
              message: 'Services open transactions with the injected TransactionRunner; the DataSource is for repositories.',
            },
          ],
        },
      ],
    },
  },
  // Graph-free boundaries (typescript-eslint's copy of no-restricted-imports, so they add to the
  // core rule's TypeORM restriction above rather than replace it).
  {
    files: ['apps/**/*.ts', 'libs/**/*.ts'],
    ignores: TEST_FILES,
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            { name: '@flagship/testing', message: 'Test helpers stay out of production code.' },
            { name: '@flagship/ledger/testing', message: 'Test helpers stay out of production code.' },
            { name: '@flagship/redis/testing', message: 'Test helpers stay out of production code.' },
            { name: '@flagship/flag-store/testing', message: 'Test helpers stay out of production code.' },
            { name: '@flagship/sse/testing', message: 'Test helpers stay out of production code.' },
          ],
        },
      ],
    },
  },
  {
    files: ['libs/domain/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['@flagship/*'], message: 'The domain is the base: it imports no other lib.' },
            { group: FRAMEWORKS, message: `The domain ${PURE_MESSAGE}.` },
          ],
        },
      ],
    },
  },
  {
    files: ['libs/flag-evaluation/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['@flagship/*', '!@flagship/domain'], message: 'The evaluator depends on the domain only.' },
            { group: FRAMEWORKS, message: `The evaluator ${PURE_MESSAGE}.` },
          ],
        },
      ],
    },
  },
  {
    files: ['libs/sse/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['@flagship/*'], message: 'The SSE kit imports no other lib: each app gives it its own rules.' },
            { group: FRAMEWORKS, message: 'The SSE kit writes to node streams: no framework, database or Redis client.' },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.js', '**/*.cjs', '**/*.mjs'],
    languageOptions: { globals: { require: 'readonly', module: 'writable', __dirname: 'readonly', process: 'readonly', console: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off', 'no-console': 'off' },
  },
  {
    files: ['**/*.spec.ts', '**/*.int-spec.ts', '**/*.e2e-spec.ts', '**/*.fixture.ts', 'libs/testing/**/*.ts', 'tools/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
      'no-console': 'off',
    },
  },
);
