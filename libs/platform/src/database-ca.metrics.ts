import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Inject, Injectable } from '@nestjs/common';
import { Gauge } from 'prom-client';
import { DATABASE_CA_FILE, pemCertificates } from '@flagship/persistence';
import { HttpMetrics } from '@flagship/service-kit';

/** The earliest `notAfter` of the certificates in a PEM bundle, in Unix seconds; undefined when it holds none. */
export function earliestExpiry(pem: string): number | undefined {
  let earliest: number | undefined;
  for (const block of pemCertificates(pem)) {
    const end = Date.parse(new X509Certificate(block).validTo) / 1000;
    if (earliest === undefined || end < earliest) earliest = end;
  }
  return earliest;
}

/**
 * The Postgres CA bundle's expiry, for the alert FlagshipDatabaseCaExpiring (k8s/runbooks): once a
 * certificate of the bundle the apps verify Postgres with runs out, every new connection is refused.
 * The file is the one PersistenceModule's connection settings trust; it is read when Prometheus
 * scrapes (the Secret's file is replaced in place on rotation). No sample without a CA file (TLS
 * off, or Node's public CAs), or when the file cannot be read.
 */
@Injectable()
export class DatabaseCaMetrics {
  constructor(metrics: HttpMetrics, @Inject(DATABASE_CA_FILE) caFile: string | null) {
    new Gauge({
      name: 'database_tls_ca_expiry_timestamp_seconds',
      help: 'When the first certificate of the Postgres CA bundle (DATABASE_SSL_CA_FILE) expires (Unix time)',
      labelNames: ['file'],
      registers: [metrics.registry],
      collect() {
        this.reset();
        if (caFile === null) return;
        try {
          const end = earliestExpiry(readFileSync(caFile, 'utf8'));
          if (end !== undefined) this.set({ file: caFile }, end);
        } catch {
          // Unreadable now: no sample; the connections' own errors say why.
        }
      },
    });
  }
}
