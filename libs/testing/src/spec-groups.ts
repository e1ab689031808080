import { relative } from 'node:path';

/**
 * Runs the specs jest.preset.js gave to this group file (`*.int-group.ts`, `*.e2e-group.ts`; `npm
 * test` sets TEST_GROUPS=1): jest evaluates every module again for each file, and a spec's imports
 * (the app module, TypeORM, Nest, Playwright) cost more CPU than many of its tests. Each spec is
 * required inside its own describe block, so its hooks, fixtures and database stay its own, as when
 * it runs alone.
 */
export function runSpecGroup(groupFile: string): void {
  // jest's global, typed here: management-api's build takes this lib in (src/testing/management-api.process.ts) without jest's types.
  const { describe } = globalThis as unknown as { describe: (name: string, body: () => void) => void };
  const groups = (globalThis as { SPEC_GROUPS?: Record<string, string[]> }).SPEC_GROUPS ?? {};
  const members = groups[groupFile];
  if (members === undefined) throw new Error(`${groupFile} runs only with TEST_GROUPS=1 (npm test); run its specs on their own otherwise`);
  if (members.length === 0) throw new Error(`${groupFile}: no spec of its layer in its folder or below`);
  for (const spec of members) {
    describe(relative(process.cwd(), spec), () => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- a spec registers its tests as it loads, inside this block
      require(spec);
    });
  }
}
