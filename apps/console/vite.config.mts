import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vitest/config';

const here = fileURLToPath(new URL('.', import.meta.url));

// Served by management-api at /console (apps/management-api/src/console); hashed names under assets/
// are what lets it cache them for a year.
export default defineConfig({
  root: here,
  base: '/console/',
  plugins: [react()],
  // The flag editor checks drafts with the evaluator's own validator (pure TypeScript, no Node APIs on that path).
  resolve: {
    alias: {
      '@flagship/flag-evaluation': fileURLToPath(new URL('../../libs/flag-evaluation/src/index.ts', import.meta.url)),
      '@flagship/domain': fileURLToPath(new URL('../../libs/domain/src/index.ts', import.meta.url)),
    },
  },
  build: {
    outDir: fileURLToPath(new URL('../../dist/apps/console', import.meta.url)),
    emptyOutDir: true,
    // Read by e2e/bundle-size.spec.ts to hold the initial JavaScript to its budget.
    manifest: true,
    sourcemap: false,
    target: 'es2022',
  },
  test: {
    environment: 'jsdom',
    include: ['src/**/*.test.tsx'],
    setupFiles: ['src/test-setup.ts'],
    // react-aria components under jsdom take seconds per test on a loaded 2-core CI machine.
    testTimeout: 30_000,
    // All files in one process, one jsdom and one module graph: loading react-aria and a jsdom per file
    // was two thirds of the CPU (docs/decisions/2026-11-29-console-vitest-one-process.md). Tests stay
    // apart by test-setup.ts's cleanup and each file's unstubbed globals; the files pass in any order.
    pool: 'forks',
    isolate: false,
    poolOptions: { forks: { singleFork: true } },
  },
});
