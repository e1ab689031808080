import type { ServerResponse } from 'node:http';
import { expressRoute, type ExpressRoutedRequest } from '@flagship/tracing';
import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client';

/** One Prometheus registry per app instance (tests boot several apps in one process). */
export class HttpMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'method' | 'route' | 'status'>;
  private readonly duration: Histogram<'method' | 'route' | 'status'>;

  constructor(serviceName: string, collectDefaults = true) {
    this.registry.setDefaultLabels({ service: serviceName });
    if (collectDefaults) collectDefaultMetrics({ register: this.registry });
    this.requests = new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests answered, by route template and status',
      labelNames: ['method', 'route', 'status'],
      registers: [this.registry],
    });
    this.duration = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request latency, by route template and status',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [this.registry],
    });
  }

  /** Records one answered request; `route` is the template (`/api/flags/:flagKey`), never the raw path. */
  observe(method: string, route: string, status: number, seconds: number): void {
    const labels = { method, route, status: String(status) };
    this.requests.inc(labels);
    this.duration.observe(labels, seconds);
  }

  /** Express middleware measuring every request from its first byte to the response's end. */
  middleware() {
    return (req: ExpressRoutedRequest, res: ServerResponse, next: () => void): void => {
      const start = process.hrtime.bigint();
      res.once('finish', () => {
        // Requests no route answered (Nest's catch-all of unknown routes) are one series, not one per path.
        const route = expressRoute(req) ?? '(unmatched)';
        this.observe(req.method ?? 'GET', route, res.statusCode, Number(process.hrtime.bigint() - start) / 1e9);
      });
      next();
    };
  }
}
