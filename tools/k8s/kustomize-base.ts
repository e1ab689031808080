/**
 * k8s/base and the kustomize overlays are generated from the Helm chart (k8s/base from its default
 * values, each overlay from its values file, KUSTOMIZE_RENDERINGS), so the plain manifests and the
 * chart cannot drift apart: the chart's ConfigMaps become kustomize configMapGenerators (a changed config
 * gets a new name suffix and rolls the pods, as the chart's checksum annotation does), everything
 * else is written as rendered. `UPDATE_K8S_BASE=1 npx jest tools/k8s` rewrites it; the test fails
 * while the committed files differ.
 */
import { join } from 'node:path';
import { stringify } from 'yaml';
import { renderChart } from './helm';

type Obj = Record<string, any>;

/** Each generated directory: the values files it renders (after values.yaml) and its namespace. */
// Kustomize has no hooks: the migration is a plain Job, named after what it runs (migrations.mode job).
const PLAIN_JOB = { migrations: { mode: 'job' } };
export const KUSTOMIZE_RENDERINGS: Array<{ dir: string; valuesFiles: string[]; namespace?: string; values: Record<string, unknown> }> = [
  { dir: 'k8s/base', valuesFiles: [], values: PLAIN_JOB },
  { dir: 'k8s/overlays/production', valuesFiles: ['values-production.yaml'], namespace: 'flagship', values: PLAIN_JOB },
  { dir: 'k8s/overlays/development', valuesFiles: ['values-development.yaml'], namespace: 'flagship-dev', values: PLAIN_JOB },
];

export function kustomizeBase(chartDir: string, rendering: (typeof KUSTOMIZE_RENDERINGS)[number] = KUSTOMIZE_RENDERINGS[0]): Record<string, string> {
  const source = rendering.valuesFiles.length ? rendering.valuesFiles.join(', ') : 'default values';
  const HEADER = `# Generated from k8s/helm/flagship (${source}) by tools/k8s/kustomize-base.ts: do not edit;\n# adapt it in an overlay of your own that lists this directory in its resources.\n# Regenerate: UPDATE_K8S_BASE=1 npx jest tools/k8s\n`;
  // In the overlay's namespace: what reads .Release.Namespace (the alerts' namespace matcher) names the one kustomize sets.
  const { documents } = renderChart(chartDir, { releaseName: 'flagship', namespace: rendering.namespace, valuesFiles: rendering.valuesFiles.map((f) => join(chartDir, f)), values: rendering.values });
  const configMaps = documents.filter((d) => d['kind'] === 'ConfigMap') as Obj[];
  const resources = documents
    // `helm test` pods are Helm's alone: kustomize would create them with the apps.
    .filter((d) => d['kind'] !== 'ConfigMap' && (d['metadata'] as Obj | undefined)?.annotations?.['helm.sh/hook'] !== 'test')
    .map((d) => {
      const copy = structuredClone(d) as Obj;
      // Helm's own bookkeeping means nothing to kustomize; the generator's hash replaces the checksum.
      for (const labels of [copy['metadata']?.labels, copy['spec']?.template?.metadata?.labels]) {
        if (labels) {
          delete labels['helm.sh/chart'];
          if (labels['app.kubernetes.io/managed-by']) labels['app.kubernetes.io/managed-by'] = 'kustomize';
        }
      }
      delete copy['spec']?.template?.metadata?.annotations?.['checksum/config'];
      if (copy['spec']?.template?.metadata?.annotations && Object.keys(copy['spec'].template.metadata.annotations).length === 0) {
        delete copy['spec'].template.metadata.annotations;
      }
      return copy;
    });
  const kustomization = {
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    ...(rendering.namespace ? { namespace: rendering.namespace } : {}),
    resources: ['flagship.yaml'],
    configMapGenerator: configMaps.map((cm) => ({
      name: cm['metadata'].name,
      options: { labels: { 'app.kubernetes.io/name': cm['metadata'].labels['app.kubernetes.io/name'], 'app.kubernetes.io/component': cm['metadata'].labels['app.kubernetes.io/component'] } },
      literals: Object.entries(cm['data'] as Record<string, string>).map(([k, v]) => `${k}=${v}`),
    })),
  };
  return {
    'kustomization.yaml': HEADER + stringify(kustomization, { lineWidth: 0 }),
    'flagship.yaml': HEADER + resources.map((r) => stringify(r, { lineWidth: 0 })).join('---\n'),
  };
}
