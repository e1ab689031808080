import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

type Labels = 'product' | 'provider' | 'model';

interface Children {
  requests: Counter.Internal;
  input: Counter.Internal;
  output: Counter.Internal;
  debits: Counter.Internal;
  upstream: Histogram.Internal<Labels>;
}

/**
 * The gateway's own Prometheus series, in the app's registry (service-kit's HttpMetrics), by product,
 * provider and model (models are the configured catalogue, products the canonical keys: the label
 * sets stay small).
 */
export class GatewayMetrics {
  private readonly requests: Counter<Labels | 'endpoint' | 'outcome'>;
  private readonly tokens: Counter<Labels | 'direction'>;
  private readonly debits: Counter<Labels>;
  private readonly overruns: Counter<Labels>;
  private readonly overrunMicroCredits: Counter<Labels>;
  private readonly upstream: Histogram<Labels>;
  private readonly overhead: Histogram<'endpoint'>;
  /**
   * The series of each label set, looked up once: prom-client validates and hashes the labels on
   * every inc/observe given them, a cost paid on every request (docs/decisions/2026-11-29-gateway-hot-path.md).
   */
  private readonly children = new Map<string, Children>();
  private readonly overheadByEndpoint = new Map<string, Histogram.Internal<'endpoint'>>();

  constructor(
    registry: Registry,
    /** Requests being served now (the handler's own count), read when Prometheus scrapes. */
    inFlight?: () => number,
  ) {
    const registers = [registry];
    if (inFlight !== undefined) {
      // What an autoscaler scales the gateway on (its work is waiting on providers, not CPU): k8s/README.md.
      new Gauge({
        name: 'gateway_requests_in_flight',
        help: 'Gateway requests being served now, from the token check to the answer (streams until they end)',
        registers,
        collect() {
          this.set(inFlight());
        },
      });
    }
    this.requests = new Counter({
      name: 'gateway_requests_total',
      help: 'Gateway requests that reached a provider, by outcome (succeeded, failed, client_gone, ...)',
      labelNames: ['product', 'provider', 'model', 'endpoint', 'outcome'],
      registers,
    });
    this.tokens = new Counter({ name: 'gateway_tokens_total', help: 'Tokens used, by direction (input, output)', labelNames: ['product', 'provider', 'model', 'direction'], registers });
    this.debits = new Counter({ name: 'gateway_debit_microcredits_total', help: 'Micro-credits debited', labelNames: ['product', 'provider', 'model'], registers });
    // A settlement above its reservation: admission's "at worst one request below zero" then fails (FlagshipGatewaySettlementOverrun).
    this.overruns = new Counter({
      name: 'gateway_settlement_overruns_total',
      help: 'Requests whose debit exceeded the credit reserved for them (a provider ignored the output limit)',
      labelNames: ['product', 'provider', 'model'],
      registers,
    });
    this.overrunMicroCredits = new Counter({
      name: 'gateway_overrun_microcredits_total',
      help: 'Micro-credits debited above the reservations of overrun requests',
      labelNames: ['product', 'provider', 'model'],
      registers,
    });
    this.upstream = new Histogram({
      name: 'gateway_upstream_duration_seconds',
      help: 'Time from sending a request upstream to its whole answer',
      labelNames: ['product', 'provider', 'model'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers,
    });
    this.overhead = new Histogram({
      name: 'gateway_overhead_seconds',
      help: 'Time the gateway itself adds to a request (x-gateway-overhead-ms)',
      labelNames: ['endpoint'],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1],
      registers,
    });
  }

  completed(
    labels: { product: string; provider: string; model: string },
    endpoint: string,
    outcome: string,
    usage: { inputTokens: number; outputTokens: number },
    debit: number,
    upstreamMs: number,
  ): void {
    const key = `${labels.product}\u0000${labels.provider}\u0000${labels.model}\u0000${endpoint}\u0000${outcome}`;
    let c = this.children.get(key);
    if (c === undefined) {
      c = {
        requests: this.requests.labels({ ...labels, endpoint, outcome }),
        input: this.tokens.labels({ ...labels, direction: 'input' }),
        output: this.tokens.labels({ ...labels, direction: 'output' }),
        debits: this.debits.labels(labels),
        upstream: this.upstream.labels(labels),
      };
      // The label sets are few (the catalogue's models, the canonical products, a handful of outcomes).
      if (this.children.size >= 10_000) this.children.clear();
      this.children.set(key, c);
    }
    c.requests.inc();
    if (usage.inputTokens > 0) c.input.inc(usage.inputTokens);
    if (usage.outputTokens > 0) c.output.inc(usage.outputTokens);
    if (debit > 0) c.debits.inc(debit);
    c.upstream.observe(upstreamMs / 1000);
  }

  /** A settlement of `debit` above its reservation of `reserved` (rare: looked up by label each time). */
  overrun(labels: { product: string; provider: string; model: string }, reserved: number, debit: number): void {
    this.overruns.inc(labels);
    this.overrunMicroCredits.inc(labels, debit - reserved);
  }

  overheadMs(endpoint: string, ms: number): void {
    let h = this.overheadByEndpoint.get(endpoint);
    if (h === undefined) {
      h = this.overhead.labels({ endpoint });
      this.overheadByEndpoint.set(endpoint, h);
    }
    h.observe(ms / 1000);
  }
}
