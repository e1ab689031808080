/**
 * k8s/base is generated from the Helm chart (default values), so the plain manifests and the chart
 * cannot drift apart: the chart's ConfigMaps become kustomize configMapGenerators (a changed config
 * gets a new name suffix and rolls the pods, as the chart's checksum annotation does), everything
 * else is written as rendered. `UPDATE_K8S_BASE=1 npx jest tools/k8s` rewrites it; the test fails
 * while the committed files differ.
 */
import { stringify } from 'yaml';
import { renderChart } from './helm';

type Obj = Record<string, any>;

const HEADER = '# Generated from k8s/helm/flagship (default values) by tools/k8s/kustomize-base.ts: do not edit.\n# Regenerate: UPDATE_K8S_BASE=1 npx jest tools/k8s\n';

export function kustomizeBase(chartDir: string): Record<string, string> {
  const { documents } = renderChart(chartDir, { releaseName: 'flagship' });
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
