/**
 * docs/architecture.md's layout names every app and every lib, each lib with a line of what it is
 * for: a lib added (or an app) fails here until the layout lists it. Reads files only.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');
const projects = (group: 'apps' | 'libs'): string[] =>
  readdirSync(join(ROOT, group), { withFileTypes: true })
    .filter((e) => e.isDirectory() && existsSync(join(ROOT, group, e.name, 'project.json')))
    .map((e) => e.name)
    .sort();

describe('docs/architecture.md', () => {
  const doc = readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8');
  const layout = /```\napps\/\n([\s\S]*?)```/.exec(doc)?.[1] ?? '';

  it('has a layout block starting at apps/', () => {
    expect(layout).not.toBe('');
  });

  it('lists every app', () => {
    const missing = projects('apps').filter((app) => !new RegExp(`^  ${app}/`, 'm').test(layout));
    expect(missing).toEqual([]);
  });

  it('lists every lib with what it is for', () => {
    const missing = projects('libs').filter((lib) => !new RegExp(`^  ${lib} +\\S`, 'm').test(layout));
    expect(missing).toEqual([]);
  });

  it('lists no lib that does not exist', () => {
    const libsBlock = /^libs\/.*\n((?: {2}.*\n)*)/m.exec(layout)?.[1] ?? '';
    const listed = [...libsBlock.matchAll(/^ {2}([a-z][a-z0-9-]*) /gm)].map((m) => m[1]);
    expect(listed.filter((lib) => !projects('libs').includes(lib))).toEqual([]);
  });
});
