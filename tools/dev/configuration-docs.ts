/**
 * The tables of environment variables in docs/configuration.md, generated from the apps' own env
 * schemas (apps/<app>/src/env.schema.ts, read through tools/k8s/app-contracts), so a variable cannot
 * be added without being documented: configuration-docs.spec.ts fails until the tables are rewritten.
 *
 *   TS_NODE_PROJECT=tsconfig.json node -r ts-node/register/transpile-only -r tsconfig-paths/register tools/dev/configuration-docs.ts
 *
 * Names, defaults and allowed values come from the schema; the description is the schema's `desc`,
 * or, for a variable whose schema has none, the one written in the doc's table, which is kept.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');
export const CONFIGURATION_DOC = join(ROOT, 'docs', 'configuration.md');

// The deployment checks' reading of each app's env schema (tools-k8s, another Nx project: required by path).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { appContract, appNames } = require(join(ROOT, 'tools', 'k8s', 'app-contracts')) as typeof import('../k8s/app-contracts');

/** What envalid keeps of a spec that the tables show. */
interface DocumentedSpec {
  _parse: (input: string) => unknown;
  default?: unknown;
  devDefault?: unknown;
  desc?: string;
  choices?: readonly unknown[];
}

/**
 * One table: `common` (what every app reads), the apps that share a setting joined by `+`
 * (`billing-worker+management-api`: Stripe's), or one app's own.
 */
export interface EnvSection {
  id: string;
  specs: Record<string, DocumentedSpec>;
}

/**
 * Every app's variables, each in exactly one table. A setting spread into several schemas from one
 * place (libs/config's common settings, libs/billing's Stripe settings) is the same spec object in
 * each, so it is documented once, under the apps that read it.
 */
export function envSections(): EnvSection[] {
  const apps = appNames();
  const readers = new Map<DocumentedSpec, { name: string; apps: string[] }>();
  for (const app of apps) {
    for (const [name, spec] of Object.entries(appContract(app).specs as Record<string, DocumentedSpec>)) {
      const entry = readers.get(spec) ?? { name, apps: [] };
      entry.apps.push(app);
      readers.set(spec, entry);
    }
  }
  const sections = new Map<string, EnvSection>([['common', { id: 'common', specs: {} }]]);
  for (const [spec, { name, apps: by }] of readers) {
    const id = by.length === apps.length ? 'common' : by.join('+');
    const section = sections.get(id) ?? { id, specs: {} };
    section.specs[name] = spec;
    sections.set(id, section);
  }
  // common first, then the shared tables, then each app's own, in the apps' order.
  const order = (id: string) => (id === 'common' ? 0 : id.includes('+') ? 1 : 2);
  return [...sections.values()].sort((a, b) => order(a.id) - order(b.id) || a.id.localeCompare(b.id));
}

const code = (value: unknown): string => `\`${String(value)}\``;

/** The default column: the default (empty shown as such), what is required, and the values allowed. */
function defaultCell(spec: DocumentedSpec): string {
  let text: string;
  if ('default' in spec) {
    // envalid needs a defined default: an optional port uses `false` for "unset", which its parser never returns.
    const unset = spec.default === '' || (spec.default === false && !isFalseValue(spec));
    text = unset ? '(empty)' : code(spec.default);
  } else if (Object.hasOwn(spec, 'devDefault')) {
    text = `required in production; else ${spec.devDefault === '' ? '(empty)' : code(spec.devDefault)}`;
  } else {
    text = '**required**';
  }
  const choices = (spec.choices ?? []).filter((c) => c !== '');
  if (choices.length > 0) text += `; one of ${choices.map(code).join(', ')}`;
  return text;
}

function isFalseValue(spec: DocumentedSpec): boolean {
  try {
    return spec._parse('false') === false;
  } catch {
    return false;
  }
}

const escapeCell = (text: string): string => text.replace(/\|/g, '\\|').replace(/\s+/g, ' ').trim();
const unescapeCell = (text: string): string => text.replace(/\\\|/g, '|').trim();

export const startMarker = (id: string): string => `<!-- env:${id} -->`;
export const endMarker = (id: string): string => `<!-- /env:${id} -->`;

export interface DocumentedRow {
  defaultText: string;
  meaning: string;
}

/** The rows of one generated table in the doc, by variable name (empty when the table is missing). */
export function documentedRows(doc: string, id: string): Map<string, DocumentedRow> {
  const rows = new Map<string, DocumentedRow>();
  const start = doc.indexOf(startMarker(id));
  const end = doc.indexOf(endMarker(id));
  if (start < 0 || end < start) return rows;
  for (const line of doc.slice(start, end).split('\n')) {
    const m = /^\| `([A-Z][A-Z0-9_]*)` \| (.*) \|$/.exec(line);
    if (!m) continue;
    const cells = m[2].split(/(?<!\\) \| /);
    rows.set(m[1], { defaultText: unescapeCell(cells[0] ?? ''), meaning: unescapeCell(cells.slice(1).join(' | ')) });
  }
  return rows;
}

/** One section's table, keeping the doc's descriptions of variables the schema does not describe. */
export function renderTable(section: EnvSection, kept: Map<string, DocumentedRow>): string {
  const lines = ['| variable | default | what it does |', '|---|---|---|'];
  for (const [name, spec] of Object.entries(section.specs).sort(([a], [b]) => a.localeCompare(b))) {
    const meaning = spec.desc ?? kept.get(name)?.meaning ?? '';
    lines.push(`| ${code(name)} | ${escapeCell(defaultCell(spec))} | ${escapeCell(meaning)} |`);
  }
  return lines.join('\n');
}

/** The doc with every generated table rewritten from the schemas; a new app's table is appended. */
export function renderConfigurationDoc(doc: string, sections: EnvSection[] = envSections()): string {
  let out = doc;
  for (const section of sections) {
    const table = `${startMarker(section.id)}\n${renderTable(section, documentedRows(out, section.id))}\n${endMarker(section.id)}`;
    const start = out.indexOf(startMarker(section.id));
    const end = out.indexOf(endMarker(section.id));
    if (start >= 0 && end > start) out = out.slice(0, start) + table + out.slice(end + endMarker(section.id).length);
    else out = `${out.replace(/\n*$/, '')}\n\n### ${section.id}\n\n${table}\n`;
  }
  return out;
}

if (require.main === module) {
  const doc = readFileSync(CONFIGURATION_DOC, 'utf8');
  const next = renderConfigurationDoc(doc);
  writeFileSync(CONFIGURATION_DOC, next);
  process.stdout.write(next === doc ? 'docs/configuration.md was current\n' : 'docs/configuration.md rewritten\n');
}
