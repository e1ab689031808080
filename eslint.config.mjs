import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

const ROOT = dirname(fileURLToPath(import.meta.url));

// Test code: it may use @flagship/testing; production code may not.
const TEST_FILES = ['**/*.spec.ts', '**/*.int-spec.ts', '**/*.int-group.ts', '**/*.e2e-group.ts', '**/*.e2e-spec.ts', '**/*.fixture.ts', 'libs/testing/**/*.ts', 'tools/**/*.ts', '**/src/testing/**/*.ts'];
const FRAMEWORKS = ['@nestjs/*', 'typeorm', 'pg', 'ioredis', 'express', 'passport*'];

/**
 * Which libs a project may import, by its scope tag (project.json). A lib is shared (every server
 * app), of the flags apps, of the money (credits, usage, Stripe), of the APIs callers reach with OAuth
 * tokens, or the published client. Specs count too (Nx's graph holds their imports).
 */
const CLIENT_SAFE = ['layer:base', 'kind:pure', 'scope:client', 'kind:testing'];
const SCOPES = [
  { sourceTag: 'scope:shared', onlyDependOnLibsWithTags: ['scope:shared'], why: 'a shared lib imports only shared libs' },
  { sourceTag: 'scope:flags', onlyDependOnLibsWithTags: ['scope:shared', 'scope:flags'], why: 'the flags libs know nothing of money or the APIs' },
  { sourceTag: 'scope:billing', onlyDependOnLibsWithTags: ['scope:shared', 'scope:billing'], why: 'the money libs know nothing of flags or the APIs' },
  { sourceTag: 'scope:api', onlyDependOnLibsWithTags: ['scope:shared', 'scope:api'], why: 'the API libs (tokens, request policies) know nothing of flags or money' },
  { sourceTag: 'scope:client', onlyDependOnLibsWithTags: CLIENT_SAFE, why: 'the published client takes only pure libs' },
  { sourceTag: 'scope:management-api', onlyDependOnLibsWithTags: ['scope:shared', 'scope:flags', 'scope:billing', 'scope:api', 'scope:client'], why: 'management-api may use every lib' },
  { sourceTag: 'scope:orep-server', onlyDependOnLibsWithTags: ['scope:shared', 'scope:flags'], why: 'orep-server serves flags: no money, no OAuth' },
  // The flag store and evaluator: a bound route is routed by its flag (CONTRACT.md section 11). Still no flag streams (an app concern).
  { sourceTag: 'scope:ai-gateway', onlyDependOnLibsWithTags: ['scope:shared', 'scope:billing', 'scope:api', 'scope:flags'], why: 'the gateway spends credits and routes bound routes by their flags: no flag streams' },
  { sourceTag: 'scope:billing-worker', onlyDependOnLibsWithTags: ['scope:shared', 'scope:billing', 'scope:client'], why: 'the billing worker keeps money: no flags, no OAuth' },
  { sourceTag: 'scope:console', onlyDependOnLibsWithTags: CLIENT_SAFE, why: 'the console runs in a browser: pure libs and the client only' },
];

/**
 * Nx's rule, from the project tags. It needs the project graph, which only an Nx command caches
 * (`npm run lint` runs one first): a bare eslint skips it, so the no-restricted-imports rules and
 * flagship/scope-boundaries below say the same thing without a graph. "No @flagship/testing in production code" is theirs alone: a
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
    ...SCOPES.map(({ sourceTag, onlyDependOnLibsWithTags }) => ({ sourceTag, onlyDependOnLibsWithTags })),
    // The domain is the base: no other lib, no framework.
    { sourceTag: 'layer:base', notDependOnLibsWithTags: ['type:lib'], bannedExternalImports: FRAMEWORKS },
    // The evaluator stays pure: the domain only, no framework, no database.
    { sourceTag: 'kind:pure', onlyDependOnLibsWithTags: ['layer:base'], bannedExternalImports: FRAMEWORKS },
  ],
};

/** Each project's tags by its folder (`libs/redis`), and each `@flagship/*` alias's folder. */
function readProjects() {
  const tags = new Map();
  for (const group of ['apps', 'libs']) {
    for (const name of readdirSync(join(ROOT, group))) {
      const file = join(ROOT, group, name, 'project.json');
      if (existsSync(file)) tags.set(`${group}/${name}`, JSON.parse(readFileSync(file, 'utf8')).tags ?? []);
    }
  }
  const aliases = new Map();
  for (const [alias, [target]] of Object.entries(JSON.parse(readFileSync(join(ROOT, 'tsconfig.base.json'), 'utf8')).compilerOptions.paths)) {
    aliases.set(alias, /^\.?\/?((?:apps|libs)\/[^/]+)\//.exec(target)?.[1]);
  }
  return { tags, aliases };
}

/**
 * SCOPES without a project graph: Nx's rule skips when no Nx command has cached one (a bare eslint,
 * an editor), so this rule reads the tags itself and checks each `@flagship/*` import and require.
 */
let projects;
const scopeBoundaries = {
  meta: { type: 'problem', schema: [] },
  create(context) {
    projects ??= readProjects();
    const { tags, aliases } = projects;
    const source = /^((?:apps|libs)\/[^/]+)\//.exec(relative(ROOT, context.filename).split('\\').join('/'))?.[1];
    const rules = SCOPES.filter((r) => (tags.get(source) ?? []).includes(r.sourceTag));
    if (rules.length === 0) return {};
    const check = (node, specifier) => {
      if (typeof specifier !== 'string' || !aliases.has(specifier)) return;
      const target = aliases.get(specifier);
      if (target === source) return;
      const targetTags = tags.get(target) ?? [];
      for (const rule of rules) {
        if (!rule.onlyDependOnLibsWithTags.some((t) => targetTags.includes(t))) {
          context.report({ node, message: `${source} (${rule.sourceTag}) may not import ${specifier} (${targetTags.join(', ')}): ${rule.why}.` });
        }
      }
    };
    return {
      ImportDeclaration: (node) => check(node, node.source.value),
      ExportAllDeclaration: (node) => check(node, node.source.value),
      ExportNamedDeclaration: (node) => node.source && check(node, node.source.value),
      ImportExpression: (node) => check(node, node.source.value),
      CallExpression: (node) => node.callee.type === 'Identifier' && node.callee.name === 'require' && check(node, node.arguments[0]?.value),
    };
  },
};

const PURE_MESSAGE = 'stays pure (STYLE.md): no framework, database or Redis client';

export default tseslint.config(
  { ignores: ['**/dist', '**/node_modules', '**/tmp', '**/coverage', '.nx/**', 'openapi/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    plugins: { '@nx': nx, flagship: { rules: { 'scope-boundaries': scopeBoundaries } } },
    rules: {
      '@nx/enforce-module-boundaries': ['error', MODULE_BOUNDARIES],
      'flagship/scope-boundaries': 'error',
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
            { name: '@flagship/persistence/testing', message: 'Test helpers stay out of production code.' },
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
    files: ['**/*.spec.ts', '**/*.int-spec.ts', '**/*.int-group.ts', '**/*.e2e-group.ts', '**/*.e2e-spec.ts', '**/*.fixture.ts', 'libs/testing/**/*.ts', 'tools/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
      'no-console': 'off',
    },
  },
);
