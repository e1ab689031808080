import type { OnModuleDestroy, Provider } from '@nestjs/common';
import { Gauge } from 'prom-client';
import { APP_CONFIG } from '@flagship/config';
import { HttpMetrics } from '@flagship/service-kit';
import type { OrepServerConfig } from '../env.schema';
import { OrepKeysHolder } from '../keys/orep-keys.holder';
import { FLAG_SOURCE, type FlagSource } from '../sources/flag-source';
import { OfrepPush } from './ofrep-push';

/** The app's one OfrepPush (absent when OREP_SSE_MAX_CONNECTIONS is 0), as a Nest provider. */
export class OfrepPushHolder implements OnModuleDestroy {
  constructor(readonly push: OfrepPush | undefined) {}

  /** Before Nest closes the HTTP server, which could never close while streams are open. */
  onModuleDestroy(): void {
    this.push?.close();
  }
}

export function scopeOf(config: OrepServerConfig): string {
  switch (config.sourceMode) {
    case 'postgres':
      return `postgres:${config.OREP_TENANT_ID}:${config.OREP_ENVIRONMENT}`;
    case 'file':
      return `file:${config.OREP_FLAGS_FILE}`;
    default:
      return 'embedded';
  }
}

/**
 * `orep_sse_connections`: the push streams open now, read when Prometheus scrapes (nothing per
 * connection); what an autoscaler scales orep-server on (k8s/README.md).
 */
function exportConnections(metrics: HttpMetrics, push: OfrepPush | undefined): void {
  new Gauge({
    name: 'orep_sse_connections',
    help: 'OFREP push (SSE) streams open on this process',
    registers: [metrics.registry],
    collect() {
      this.set(push?.hub.size ?? 0);
    },
  });
}

export const ofrepPushHolderFactory: Provider = {
  provide: OfrepPushHolder,
  inject: [APP_CONFIG, FLAG_SOURCE, HttpMetrics, OrepKeysHolder],
  useFactory: (config: OrepServerConfig, source: FlagSource, metrics: HttpMetrics, keys: OrepKeysHolder) => {
    const holder = new OfrepPushHolder(
      config.OREP_SSE_MAX_CONNECTIONS === 0
        ? undefined
        : new OfrepPush(source, {
            secret: config.OREP_AUTH_TOKEN,
            scope: scopeOf(config),
            tokenTtlS: config.OREP_SSE_TOKEN_TTL_S,
            inactivityDelaySec: config.OREP_SSE_INACTIVITY_DELAY_S,
            publicUrl: config.OREP_PUBLIC_URL,
            trustProxy: config.TRUST_PROXY,
            keys: keys.keys,
            maxConnections: config.OREP_SSE_MAX_CONNECTIONS,
            maxPerAddress: config.OREP_SSE_MAX_PER_ADDRESS,
            maxBufferedBytes: config.OREP_SSE_MAX_BUFFER_BYTES,
            heartbeatMs: config.OREP_SSE_HEARTBEAT_S * 1000,
          }),
    );
    exportConnections(metrics, holder.push);
    return holder;
  },
};
