import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/dist', '**/node_modules', '**/tmp', '**/coverage', '.nx/**', 'openapi/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    plugins: { '@nx': nx },
    rules: {
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: false,
          allow: [],
          depConstraints: [
            { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:lib'] },
            { sourceTag: 'type:lib', onlyDependOnLibsWithTags: ['type:lib'] },
            { sourceTag: 'scope:shared', onlyDependOnLibsWithTags: ['scope:shared'] },
            // The domain and the evaluator stay pure: no framework, no database, no other lib but each other.
            {
              sourceTag: 'kind:pure',
              onlyDependOnLibsWithTags: ['kind:pure'],
              bannedExternalImports: ['@nestjs/*', 'typeorm', 'pg', 'ioredis', 'express'],
            },
          ],
        },
      ],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // No consistent-type-imports: Nest's DI reads constructor types from emitted metadata, and a
      // type-only import of an injected class would silently erase it.
      eqeqeq: ['error', 'always'],
      'no-console': 'error',
    },
  },
  {
    // Repositories own SQL: TypeORM stays in repositories, entities and the persistence lib.
    files: ['apps/**/*.ts'],
    ignores: ['apps/**/*.repository.ts', 'apps/**/*.entity.ts', 'apps/**/*.int-spec.ts', 'apps/**/*.e2e-spec.ts'],
    rules: {
      'no-restricted-imports': ['error', { paths: [{ name: 'typeorm', message: 'TypeORM belongs in *.repository.ts, *.entity.ts and libs/persistence.' }] }],
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
