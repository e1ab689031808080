/**
 * The chart's alerts (PrometheusRule), the Grafana dashboards (k8s/dashboards) and the runbooks
 * (k8s/runbooks), checked against what the apps really export: every alert expression and dashboard
 * query parses with Prometheus' own grammar (@prometheus-io/lezer-promql), every metric they read
 * is on the /metrics of the app they name (the four apps started here, on this file's Postgres and
 * Redis: app-metrics.ts), the rendered PrometheusRule and dashboard ConfigMaps validate (the
 * Prometheus Operator's CRD schemas, Kubernetes'), and every alert has its runbook and its
 * runbook_url points at it.
 */
import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { parser } from '@prometheus-io/lezer-promql';
import { ROOT } from './app-contracts';
import { exposedNames, METRIC_APPS, startAppsForMetrics } from './app-metrics';
import { helm, renderChart } from './helm';
import { type Obj, ofKind, schemaProblems } from './manifest-checks';

jest.setTimeout(120_000);

const CHART = join(ROOT, 'k8s/helm/flagship');
const RUNBOOKS = join(ROOT, 'k8s/runbooks');
const DASHBOARDS = join(ROOT, 'k8s/dashboards');
/** Series Prometheus itself makes for every target (not an app's). */
const PROMETHEUS_OWN = new Set(['up']);

const ON = { prometheusRule: { enabled: true, labels: { release: 'kube-prometheus-stack' } }, grafanaDashboards: { enabled: true }, serviceMonitor: { enabled: true } };
const rendered = renderChart(CHART, { values: ON, namespace: 'flagship' }).documents;
const rule = ofKind({ name: 'alerts', objects: rendered }, 'PrometheusRule')[0] as Obj;
const alerts = (rule?.['spec'].groups as Array<{ rules: Obj[] }>).flatMap((g) => g.rules);

interface Selector {
  metric: string;
  /** The apps its `service` matcher names (= or =~ an alternation); undefined: any app. */
  services: string[] | undefined;
  /** The label names its matchers test. */
  matched: string[];
}

/** Labels Prometheus adds to every series of a target (the operator's ServiceMonitor and PodMonitor). */
const TARGET_LABELS = new Set(['namespace', 'pod', 'container', 'endpoint', 'instance', 'job', 'service']);

/** Parse errors of a PromQL expression (lezer marks them as error nodes), and the selectors it reads. */
function promql(expr: string): { errors: string[]; selectors: Selector[]; grouping: string[] } {
  const tree = parser.parse(expr);
  const errors: string[] = [];
  const selectors: Selector[] = [];
  const grouping: string[] = [];
  tree.iterate({
    enter: (n) => {
      if (n.type.isError) errors.push(`parse error at ${n.from}: ${JSON.stringify(expr.slice(Math.max(0, n.from - 20), n.from + 20))}`);
      // by (...) of an aggregation (not on (...) of a binary operator's matching).
      if (n.name === 'GroupingLabels' && n.node.parent?.name === 'AggregateModifier') {
        for (const l of n.node.getChildren('LabelName')) grouping.push(expr.slice(l.from, l.to));
      }
      if (n.name !== 'VectorSelector') return;
      const node = n.node;
      const id = node.getChild('Identifier');
      if (!id) return;
      let services: string[] | undefined;
      const matched: string[] = [];
      for (const m of node.getChild('LabelMatchers')?.getChildren('UnquotedLabelMatcher') ?? []) {
        const label = expr.slice(m.getChild('LabelName')!.from, m.getChild('LabelName')!.to);
        matched.push(label);
        const op = expr.slice(m.getChild('MatchOp')!.from, m.getChild('MatchOp')!.to);
        const value = JSON.parse(expr.slice(m.getChild('StringLiteral')!.from, m.getChild('StringLiteral')!.to)) as string;
        if (label === 'service' && (op === '=' || op === '=~')) services = op === '=' ? [value] : value.split('|');
      }
      selectors.push({ metric: expr.slice(id.from, id.to), services, matched });
    },
  });
  return { errors, selectors, grouping };
}

/** Grafana's variables, replaced by values a query can hold, so what remains is PromQL. */
const grafanaToPromql = (q: string) => q.replace(/\$__rate_interval|\$__interval/g, '5m').replace(/\$\{?(\w+)\}?/g, 'x');

interface Dashboard {
  file: string;
  json: Obj;
  queries: string[];
}

const dashboards: Dashboard[] = readdirSync(DASHBOARDS)
  .filter((f) => f.endsWith('.json'))
  .sort()
  .map((file) => {
    const json = JSON.parse(readFileSync(join(DASHBOARDS, file), 'utf8')) as Obj;
    const panels = (json['panels'] as Obj[]).flatMap((p) => [p, ...((p['panels'] as Obj[] | undefined) ?? [])]);
    const queries = panels.flatMap((p) => ((p['targets'] as Obj[] | undefined) ?? []).map((t) => t['expr'] as string));
    // Query variables: Grafana's label_values(<selector>, label) around a PromQL selector.
    for (const v of json['templating'].list as Obj[]) {
      const def = typeof v['query'] === 'string' ? v['query'] : v['query']?.query;
      const inner = typeof def === 'string' ? /^label_values\((.+),\s*\w+\)$/.exec(def)?.[1] : undefined;
      if (inner !== undefined) queries.push(inner);
    }
    return { file, json, queries };
  });

describe('the apps really export what the alerts and dashboards read', () => {
  let exported: Record<string, Set<string>>;
  let labels: Record<string, Map<string, Set<string>>>;

  beforeAll(async () => {
    const apps = await startAppsForMetrics();
    try {
      exported = Object.fromEntries(Object.entries(apps.metrics).map(([app, text]) => [app, exposedNames(text)]));
      labels = apps.labels;
    } finally {
      await apps.close();
    }
  });

  /**
   * What is wrong with the series `expr` reads: a metric no app exports, or not the app its `service`
   * matcher names; a label it matches or groups by that neither the metric (its registry's label
   * names) nor the scrape target has.
   */
  const missing = (where: string, expr: string, defaultApps: string[]): string[] => {
    const { selectors, grouping } = promql(expr);
    const known = new Set(TARGET_LABELS);
    const problems = selectors.flatMap(({ metric, services, matched }) => {
      if (PROMETHEUS_OWN.has(metric)) return [];
      const apps = services ?? defaultApps;
      const unknownApps = apps.filter((a) => !METRIC_APPS.includes(a));
      if (unknownApps.length > 0) return [`${where}: service ${unknownApps.join(', ')} is no app`];
      const exporting = apps.filter((a) => exported[a]!.has(metric));
      if (services === undefined ? exporting.length === 0 : exporting.length < apps.length) {
        return [`${where}: ${metric} is not exported by ${apps.filter((a) => !exported[a]!.has(metric)).join(', ')}`];
      }
      const own = new Set(exporting.flatMap((a) => [...(labels[a]!.get(metric) ?? [])]));
      for (const l of own) known.add(l);
      return matched.filter((l) => !own.has(l) && !TARGET_LABELS.has(l)).map((l) => `${where}: ${metric} has no label ${l}`);
    });
    return [...problems, ...grouping.filter((l) => !known.has(l)).map((l) => `${where}: no series it reads has the label ${l} it groups by`)];
  };

  it('every app started and exported its HTTP and process series (the real /metrics, not a list)', () => {
    for (const app of METRIC_APPS) {
      expect([app, exported[app]!.has('http_requests_total'), exported[app]!.has('process_start_time_seconds')]).toEqual([app, true, true]);
    }
  });

  it('every metric an alert reads is exported by an app (by the apps its service matcher names), with the labels it reads', () => {
    expect(alerts.length).toBeGreaterThan(10);
    expect(alerts.flatMap((a) => missing(a['alert'], a['expr'], METRIC_APPS))).toEqual([]);
  });

  it.each(dashboards.map((d) => [d.file, d] as const))("every metric dashboard %s reads is exported by its app, with the labels it reads", (_file, d) => {
    const app = d.file.replace(/\.json$/, '');
    expect(METRIC_APPS).toContain(app);
    expect(d.queries.length).toBeGreaterThan(5);
    expect(d.queries.flatMap((q, i) => missing(`${d.file} query ${i}`, grafanaToPromql(q), [app]))).toEqual([]);
  });

  it('the check refuses a metric no app exports and one exported by another app than the matcher names', () => {
    expect(missing('typo', 'rate(http_request_total{service="ai-gateway"}[5m])', METRIC_APPS)).toEqual(['typo: http_request_total is not exported by ai-gateway']);
    expect(missing('wrong app', 'max(usage_ledger_pending_rows{service="management-api"})', METRIC_APPS)).toEqual(['wrong app: usage_ledger_pending_rows is not exported by management-api']);
    expect(missing('any app', 'max(usage_ledger_pending_rows)', METRIC_APPS)).toEqual([]);
    expect(missing('label', 'sum by (provder) (rate(gateway_requests_total{outcom="x"}[5m]))', METRIC_APPS)).toEqual([
      'label: gateway_requests_total has no label outcom',
      'label: no series it reads has the label provder it groups by',
    ]);
    expect(missing('labels', 'sum by (provider, le) (rate(gateway_upstream_duration_seconds_bucket{namespace="x", model="m"}[5m]))', METRIC_APPS)).toEqual([]);
  });
});

describe('alert expressions and dashboard queries parse as PromQL', () => {
  it.each(alerts.map((a) => [a['alert'] as string, a['expr'] as string]))('%s', (_name, expr) => {
    const { errors, selectors } = promql(expr);
    expect(errors).toEqual([]);
    expect(selectors.length).toBeGreaterThan(0);
    // This release's series only: two releases scraped by one Prometheus alert once each.
    expect(expr.match(/\{[^}]*\}/g)?.every((m) => m.includes('namespace="flagship"'))).toBe(true);
  });

  it.each(dashboards.map((d) => [d.file, d] as const))('%s', (_file, d) => {
    expect(d.queries.flatMap((q) => promql(grafanaToPromql(q)).errors.map((e) => `${q}: ${e}`))).toEqual([]);
  });

  it('a broken expression is refused', () => {
    expect(promql('sum(rate(http_requests_total[5m]) /').errors).not.toEqual([]);
    expect(promql('sum by (service) rate(http_requests_total[5m]))').errors).not.toEqual([]);
  });
});

describe('the PrometheusRule the chart renders', () => {
  it("validates against the Prometheus Operator's CRD schema, with the dashboards' ConfigMaps and everything else", () => {
    expect(rule).toBeDefined();
    expect(schemaProblems({ name: 'alerts on', objects: rendered })).toEqual([]);
  });

  it('the validation refuses a misspelt field and a malformed duration', () => {
    const broken = structuredClone(rule);
    broken['spec'].groups[0].rules[0].anotations = broken['spec'].groups[0].rules[0].annotations;
    broken['spec'].groups[0].rules[1].for = '5 minutes';
    const problems = schemaProblems({ name: 'broken', objects: [broken] });
    expect(problems).toHaveLength(2);
    expect(problems).toEqual(
      expect.arrayContaining([expect.stringContaining('unknown field /spec/groups/0/rules/0/anotations'), expect.stringContaining('/spec/groups/0/rules/1/for must match pattern')]),
    );
  });

  it("carries the labels the operator's ruleSelector matches, and a severity on every alert", () => {
    expect(rule['metadata'].labels.release).toBe('kube-prometheus-stack');
    for (const a of alerts) expect([a['alert'], ['critical', 'warning'].includes(a['labels'].severity)]).toEqual([a['alert'], true]);
  });

  it('lints clean with alerts and dashboards on', () => {
    const out = helm(['lint', CHART, '--strict', '--set', 'prometheusRule.enabled=true', '--set', 'grafanaDashboards.enabled=true', '--set', 'serviceMonitor.enabled=true']);
    expect([out.status, out.stderr]).toEqual([0, '']);
  });

  it('leaves out the alerts named in prometheusRule.disabled, and the schema knows every alert by name', () => {
    const names = alerts.map((a) => a['alert'] as string).sort();
    const schema = JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8')) as Obj;
    expect([...schema['properties'].prometheusRule.properties.disabled.items.enum].sort()).toEqual(names);
    const without = renderChart(CHART, { values: { prometheusRule: { enabled: true, disabled: ['FlagshipStripeMeterReportingLag'] } } }).documents;
    const left = ofKind({ name: 'disabled', objects: without }, 'PrometheusRule')[0]!['spec'].groups[0].rules.map((r: Obj) => r['alert']);
    expect(left.sort()).toEqual(names.filter((n) => n !== 'FlagshipStripeMeterReportingLag'));
    const out = helm(['lint', CHART, '--set', 'prometheusRule.disabled[0]=FlagshipNoSuchAlert']);
    expect([out.status, out.stdout + out.stderr]).toEqual([1, expect.stringContaining("at '/prometheusRule/disabled/0'")]);
  });

  it('is off by default (the operator\'s CRDs may be missing), as are the dashboards', () => {
    const plain = renderChart(CHART).documents;
    expect(plain.filter((o) => o['kind'] === 'PrometheusRule' || o['metadata']?.name?.includes('-dashboard-'))).toEqual([]);
  });

  it('NOTES.txt names the rule and the runbooks, and says when no monitor scrapes what it reads', () => {
    const notes = (sets: string[]) => {
      const out = helm(['install', 'flagship', CHART, '--dry-run=client', '--namespace', 'flagship', ...sets.flatMap((x) => ['--set', x])]);
      return out.stdout.slice(out.stdout.indexOf('NOTES:'));
    };
    const alone = notes(['prometheusRule.enabled=true']);
    expect(alone).toContain('Alerts: PrometheusRule flagship (it reads what a ServiceMonitor or PodMonitor scrapes: enable one)');
    expect(notes(['prometheusRule.enabled=true', 'serviceMonitor.enabled=true'])).toContain('Alerts: PrometheusRule flagship; runbooks at https://github.com/example/flagship/blob/main/k8s/runbooks.');
    expect(notes([])).not.toContain('Alerts:');
  });

  it('the monitors honour the apps\' service and job labels, which the alerts read', () => {
    const both = renderChart(CHART, { values: { serviceMonitor: { enabled: true }, podMonitor: { enabled: true } } }).documents;
    const endpoints = [...ofKind({ name: 'm', objects: both }, 'ServiceMonitor').flatMap((m) => m['spec'].endpoints), ...ofKind({ name: 'm', objects: both }, 'PodMonitor').flatMap((m) => m['spec'].podMetricsEndpoints)];
    expect(endpoints.map((e: Obj) => e['honorLabels'])).toEqual([true, true]);
  });
});

describe('runbooks', () => {
  const files = readdirSync(RUNBOOKS).filter((f) => f.endsWith('.md') && f !== 'README.md');
  const base = 'https://github.com/example/flagship/blob/main/k8s/runbooks';

  it('every alert links its runbook, and every runbook is an alert\'s', () => {
    for (const a of alerts) expect([a['alert'], a['annotations'].runbook_url]).toEqual([a['alert'], `${base}/${a['alert']}.md`]);
    expect(files.map((f) => f.replace(/\.md$/, '')).sort()).toEqual(alerts.map((a) => a['alert']).sort());
  });

  it('each says what the alert means, how to check and what to do, under its own name', () => {
    for (const f of files) {
      const text = readFileSync(join(RUNBOOKS, f), 'utf8');
      expect([f, text.startsWith(`# ${f.replace(/\.md$/, '')}\n`), ['## What it means', '## How to check', '## What to do'].every((h) => text.includes(h))]).toEqual([f, true, true]);
    }
  });

  it('runbook_url follows prometheusRule.runbookBaseUrl', () => {
    const other = renderChart(CHART, { values: { prometheusRule: { enabled: true, runbookBaseUrl: 'https://wiki.example.com/flagship/runbooks/' } } }).documents;
    const urls = ofKind({ name: 'u', objects: other }, 'PrometheusRule')[0]!['spec'].groups[0].rules.map((r: Obj) => r['annotations'].runbook_url as string);
    expect(urls).toContain('https://wiki.example.com/flagship/runbooks/FlagshipHighErrorRate.md');
  });

  it('k8s/README.md lists every alert, linked to its runbook', () => {
    const readme = readFileSync(join(ROOT, 'k8s/README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('\n## Alerts'), readme.indexOf('\n## ', readme.indexOf('\n## Alerts') + 1));
    for (const a of alerts) expect([a['alert'], section.includes(`[${a['alert']}](runbooks/${a['alert']}.md)`)]).toEqual([a['alert'], true]);
  });
});

describe('dashboards', () => {
  it('k8s/dashboards is the chart\'s dashboards directory (one set of files)', () => {
    expect(realpathSync(DASHBOARDS)).toBe(realpathSync(join(CHART, 'dashboards')));
  });

  it('one per app, each with its own uid, a Prometheus data source and a namespace variable', () => {
    expect(dashboards.map((d) => d.file)).toEqual(METRIC_APPS.map((a) => `${a}.json`).sort());
    expect(new Set(dashboards.map((d) => d.json['uid'])).size).toBe(dashboards.length);
    for (const d of dashboards) {
      const vars = (d.json['templating'].list as Obj[]).map((v) => `${v['name']}:${v['type']}`);
      expect([d.file, vars]).toEqual([d.file, expect.arrayContaining(['datasource:datasource', 'namespace:query'])]);
    }
  });

  it('ship as one ConfigMap each, labelled for the Grafana sidecar, holding the file as it is', () => {
    const maps = rendered.filter((o) => o['kind'] === 'ConfigMap' && o['metadata'].labels?.grafana_dashboard === '1');
    expect(maps.map((m) => m['metadata'].name).sort()).toEqual(METRIC_APPS.map((a) => `flagship-dashboard-${a}`).sort());
    for (const m of maps) {
      const [key, text] = Object.entries(m['data'] as Record<string, string>)[0]!;
      expect(text).toBe(readFileSync(join(DASHBOARDS, key), 'utf8').trimEnd());
    }
    expect(existsSync(join(CHART, 'dashboards'))).toBe(true);
  });
});
