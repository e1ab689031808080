import { Injectable } from '@nestjs/common';
import { Gauge } from 'prom-client';
import { SigningKeyService } from '@flagship/oauth';
import { HttpMetrics } from '@flagship/service-kit';

/**
 * The access-token signing key, for the alerts (k8s/runbooks): a key is published in the JWKS (and
 * so verifiable by the gateway and the SDKs) only while its lease in `signing_keys` runs, which each
 * replica renews every few minutes; renewals that keep failing let it run out and every token it
 * signed stops verifying. Read from SigningKeyService when Prometheus scrapes: nothing per token.
 */
@Injectable()
export class SigningKeyMetrics {
  constructor(keys: SigningKeyService, metrics: HttpMetrics) {
    const registers = [metrics.registry];
    new Gauge({
      name: 'oauth_signing_key_lease_expiry_timestamp_seconds',
      help: 'When the signing key stops being published in the JWKS unless its lease is renewed (Unix time, as Postgres set it at the last renewal)',
      registers,
      collect() {
        // Set from start-up on: the key is loaded before the app serves anything.
        const end = keys.status().leaseEndsAt;
        if (end !== undefined) this.set(end.getTime() / 1000);
      },
    });
    new Gauge({
      name: 'oauth_signing_key_secret_refused',
      help: '1 while the signing key secret (OAUTH_SIGNING_KEY) is unusable or gone and the previous key still signs',
      registers,
      collect() {
        this.set(keys.status().secretRefused ? 1 : 0);
      },
    });
  }
}
