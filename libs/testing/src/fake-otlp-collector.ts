import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One span as the collector received it, its attributes flattened. */
export interface CollectedSpan {
  /** The resource's service.name. */
  service: string;
  traceId: string;
  spanId: string;
  /** Absent for a root span. */
  parentSpanId?: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, string | number | boolean>;
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  statusCode: number;
}

interface AnyValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: AnyValue[] };
}
interface KeyValue {
  key: string;
  value: AnyValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: KeyValue[];
  status?: { code?: number };
}
interface ExportRequest {
  resourceSpans?: Array<{ resource?: { attributes?: KeyValue[] }; scopeSpans?: Array<{ spans?: OtlpSpan[] }> }>;
}

function valueOf(v: AnyValue): string | number | boolean {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue !== undefined) return JSON.stringify((v.arrayValue.values ?? []).map(valueOf));
  return '';
}

const flatten = (kvs: KeyValue[] | undefined): Record<string, string | number | boolean> => Object.fromEntries((kvs ?? []).map((kv) => [kv.key, valueOf(kv.value)]));

/**
 * A local stand-in for an OpenTelemetry collector's OTLP/HTTP receiver (JSON encoding, POST
 * /v1/traces, as OTLP's specification defines it): what the apps export when
 * OTEL_EXPORTER_OTLP_ENDPOINT points here. Loopback only.
 */
export class FakeOtlpCollector {
  readonly spans: CollectedSpan[] = [];
  /** Requests it could not read (wrong path, content type or body): a test expects none. */
  readonly refused: string[] = [];

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<FakeOtlpCollector> {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const collector = new FakeOtlpCollector(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    server.on('request', (req: IncomingMessage, res: ServerResponse) => void collector.receive(req, res));
    return collector;
  }

  private async receive(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const type = req.headers['content-type'] ?? '';
    if (req.method !== 'POST' || req.url !== '/v1/traces' || !type.startsWith('application/json')) {
      this.refused.push(`${req.method} ${req.url} ${type}`);
      res.writeHead(404).end();
      return;
    }
    let body: ExportRequest;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ExportRequest;
    } catch {
      this.refused.push('unparsable body');
      res.writeHead(400).end();
      return;
    }
    for (const rs of body.resourceSpans ?? []) {
      const service = String(flatten(rs.resource?.attributes)['service.name'] ?? '');
      for (const ss of rs.scopeSpans ?? []) {
        for (const s of ss.spans ?? []) {
          this.spans.push({
            service,
            traceId: s.traceId,
            spanId: s.spanId,
            ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
            name: s.name,
            kind: s.kind,
            attributes: flatten(s.attributes),
            statusCode: s.status?.code ?? 0,
          });
        }
      }
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  }

  /** The spans of one trace. */
  trace(traceId: string): CollectedSpan[] {
    return this.spans.filter((s) => s.traceId === traceId);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
