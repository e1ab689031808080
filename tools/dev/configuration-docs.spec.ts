/**
 * docs/configuration.md documents every environment variable the apps validate at start-up, with the
 * schema's own default and description: a variable added to an apps/<app>/src/env.schema.ts (or to
 * libs/config's common settings, or Stripe's) fails here until the doc's tables are regenerated
 * (tools/dev/configuration-docs.ts). Reads files only.
 */
import { readFileSync } from 'node:fs';
import { CONFIGURATION_DOC, documentedRows, envSections, renderConfigurationDoc } from './configuration-docs';

const REGENERATE = 'TS_NODE_PROJECT=tsconfig.json node -r ts-node/register/transpile-only -r tsconfig-paths/register tools/dev/configuration-docs.ts';

describe('docs/configuration.md', () => {
  const doc = readFileSync(CONFIGURATION_DOC, 'utf8');
  const sections = envSections();

  it('has a table for the common settings, the Stripe settings management-api and billing-worker share, and each app', () => {
    expect(sections.map((s) => s.id)).toEqual(expect.arrayContaining(['common', 'billing-worker+management-api', 'management-api', 'ai-gateway', 'billing-worker', 'orep-server']));
  });

  it.each(sections.map((s) => [s.id, s] as const))('lists every variable of the %s schema (else run the generator)', (id, section) => {
    const rows = documentedRows(doc, id);
    const missing = Object.keys(section.specs).filter((name) => !rows.has(name));
    expect({ missing, regenerate: missing.length > 0 ? REGENERATE : undefined }).toEqual({ missing: [], regenerate: undefined });
  });

  it.each(sections.map((s) => [s.id, s] as const))('lists no variable the %s schema does not have', (id, section) => {
    const extra = [...documentedRows(doc, id).keys()].filter((name) => !(name in section.specs));
    expect(extra).toEqual([]);
  });

  it('shows each default and allowed value as the schema has it, and the schema\'s own description', () => {
    // The generator keeps the doc's description only where the schema has none.
    expect(doc).toBe(renderConfigurationDoc(doc, sections));
  });

  it('describes every variable', () => {
    const undescribed = sections.flatMap((s) => [...documentedRows(doc, s.id)].filter(([, row]) => row.meaning === '').map(([name]) => `${s.id}: ${name}`));
    expect(undescribed).toEqual([]);
  });
});
