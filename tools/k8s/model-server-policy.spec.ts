/**
 * k8s/examples/model-server-networkpolicy.yaml: the example policy for the in-house model server,
 * which the chart does not deploy (k8s/README.md, "The model server"). It must be a valid
 * NetworkPolicy, let only the chart's gateway pods reach the model server, on its port, and let the
 * model server reach nothing but the cluster DNS: no metadata address, no cluster Service, no internet.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ROOT } from './app-contracts';
import { renderChart } from './helm';
import { egressOf, matchesSelector, type Obj, schemaProblems, workloads } from './manifest-checks';

const EXAMPLE = join(ROOT, 'k8s/examples/model-server-networkpolicy.yaml');
const policy = parseYaml(readFileSync(EXAMPLE, 'utf8')) as Obj;
const set = { name: 'model-server example', objects: [policy] };

describe('the model server\'s example NetworkPolicy', () => {
  it('is a valid NetworkPolicy (the Kubernetes API schema, unknown fields included)', () => {
    expect(schemaProblems(set)).toEqual([]);
    expect(policy).toMatchObject({ kind: 'NetworkPolicy', metadata: { namespace: 'ml' }, spec: { policyTypes: ['Ingress', 'Egress'] } });
  });

  it('selects the model server of PROVIDER_INHOUSE_URL: its namespace and port are the chart default\'s', () => {
    const values = renderChart(join(ROOT, 'k8s/helm/flagship'), { namespace: 'flagship' }).documents;
    const gateway = workloads({ name: 'chart', objects: values }).find((w) => w.app === 'ai-gateway')!;
    const inhouse = new URL(gateway.env['PROVIDER_INHOUSE_URL']!);
    // http://model-serving.ml.svc.cluster.local:8000/v1
    expect([inhouse.hostname.split('.')[1], Number(inhouse.port)]).toEqual([policy['metadata'].namespace, policy['spec'].ingress[0].ports[0].port]);
  });

  it('lets only the gateway pods of the release (rendered by the chart, in its namespace) reach it, on the serving port', () => {
    const chart = renderChart(join(ROOT, 'k8s/helm/flagship'), { namespace: 'flagship' }).documents;
    const podLabels = (app: string): Record<string, string> => workloads({ name: 'chart', objects: chart }).find((w) => w.app === app)!.deployment['spec'].template.metadata.labels;
    const ingress = policy['spec'].ingress as Obj[];
    expect(ingress).toHaveLength(1);
    expect(ingress[0]!['from']).toHaveLength(1);
    const peer = ingress[0]!['from'][0] as Obj;
    expect(peer['namespaceSelector']).toEqual({ matchLabels: { 'kubernetes.io/metadata.name': 'flagship' } });
    expect(matchesSelector(peer['podSelector'], podLabels('ai-gateway'))).toBe(true);
    for (const other of ['management-api', 'billing-worker']) expect(matchesSelector(peer['podSelector'], podLabels(other))).toBe(false);
    expect(ingress[0]!['ports']).toEqual([{ port: 8000, protocol: 'TCP' }]);
  });

  it('lets the model server reach nothing but the cluster DNS', () => {
    const labels = policy['spec'].podSelector.matchLabels as Record<string, string>;
    expect(egressOf(set, labels)).toEqual(['namespace:kube-system pods:{"k8s-app":"kube-dns"} TCP/53', 'namespace:kube-system pods:{"k8s-app":"kube-dns"} UDP/53']);
  });
});
