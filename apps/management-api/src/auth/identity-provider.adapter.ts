import { randomBytes } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type Redis from 'ioredis';
import { APP_CONFIG } from '@flagship/config';
import { REDIS, REDIS_KEYS, type RedisKeys } from '@flagship/redis';
import type { ManagementApiConfig } from '../env.schema';

/**
 * Password resets belong to the identity provider. In dev mode the embedded provider keeps a
 * one-hour reset token in Redis (what a mail would carry); with an external OIDC provider the
 * reset is that provider's own flow, so the backend records nothing and only logs the request.
 */
@Injectable()
export class IdentityProviderAdapter {
  private readonly logger = new Logger('IdentityProvider');

  constructor(
    @Inject(APP_CONFIG) private readonly config: ManagementApiConfig,
    @Inject(REDIS) private readonly redis: Redis,
    @Inject(REDIS_KEYS) private readonly keys: RedisKeys,
  ) {}

  async requestPasswordReset(email: string): Promise<void> {
    if (this.config.IDP_MODE !== 'dev') {
      this.logger.log('password reset requested; handled by the external identity provider');
      return;
    }
    const token = randomBytes(24).toString('base64url');
    await this.redis.set(this.keys.key('dev-idp', 'reset', email.toLowerCase()), token, 'EX', 3600);
  }
}
