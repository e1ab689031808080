/**
 * The console's budget: the JavaScript a first visit loads (the entry chunk and its static imports,
 * as the build's manifest lists them) is at most 250 KB gzipped.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

const DIST = join(__dirname, '../../../dist/apps/console');
const MANIFEST = join(DIST, '.vite/manifest.json');
const BUDGET = 250 * 1024;

interface Chunk { file: string; isEntry?: boolean; imports?: string[] }

describe('console bundle budget', () => {
  it('loads at most 250 KB of gzipped JavaScript initially', () => {
    if (!existsSync(MANIFEST)) throw new Error(`${MANIFEST} is missing: run \`npx nx run console:build\` first`);
    const manifest = JSON.parse(readFileSync(MANIFEST, 'utf8')) as Record<string, Chunk>;
    const entries = Object.keys(manifest).filter((k) => manifest[k]?.isEntry);
    expect(entries).toEqual(['index.html']);
    // Static imports only: dynamic imports load later, on demand.
    const initial = new Set<string>();
    const visit = (key: string) => {
      const chunk = manifest[key];
      if (!chunk || initial.has(chunk.file)) return;
      initial.add(chunk.file);
      for (const i of chunk.imports ?? []) visit(i);
    };
    entries.forEach(visit);
    const sizes = [...initial].filter((f) => f.endsWith('.js')).map((f) => gzipSync(readFileSync(join(DIST, f)), { level: 9 }).length);
    const total = sizes.reduce((a, b) => a + b, 0);
    expect(sizes.length).toBeGreaterThan(0);
    console.log(`console initial JavaScript: ${(total / 1024).toFixed(1)} KB gzipped in ${sizes.length} file(s)`);
    expect(total).toBeLessThanOrEqual(BUDGET);
  });
});
