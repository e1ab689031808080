import { Logger, type OnModuleDestroy, type Provider } from '@nestjs/common';
import { APP_CONFIG, ConfigError } from '@flagship/config';
import type { OrepServerConfig } from '../env.schema';
import { KEY_LIST_NAMES, KeyListError, OrepKeys, readKeyLists } from './orep-keys';

/** Injection token of where the app reads its secrets (main.ts: the SecretStore). */
export const OREP_SECRETS = Symbol('OREP_SECRETS');

/** What OrepKeysHolder reads: SecretStore from @flagship/config fits (the environment, or a Secrets Manager secret re-read). */
export interface SecretSource {
  get(name: string): string | undefined;
  /** Hears the names whose values changed at a re-read; absent where secrets never change. */
  onChange?(listener: (names: string[]) => void): () => void;
}

const LIST_NAMES = new Set(Object.values(KEY_LIST_NAMES));

/** The keys in force when the app starts, from `secrets`; a list that cannot be used is a one-line ConfigError. */
export function startingKeys(config: Pick<OrepServerConfig, 'OREP_AUTH_TOKEN'>, secrets: SecretSource): OrepKeys {
  try {
    return new OrepKeys(config.OREP_AUTH_TOKEN, readKeyLists((name) => secrets.get(name)));
  } catch (err) {
    if (err instanceof KeyListError) throw new ConfigError(`invalid configuration: ${err.message}`);
    throw err;
  }
}

/**
 * The app's one OrepKeys, kept current: when the secret store re-reads OREP_CLIENT_KEYS or
 * OREP_MOBILE_KEYS with new values (a Secrets Manager rotation), the new lists are put in force and
 * whatever a removed key opened ends (OfrepPush). A rotated value that cannot be used is logged and
 * the keys in force are kept: refusing every browser would be worse. Keys are never logged.
 */
export class OrepKeysHolder implements OnModuleDestroy {
  private readonly logger = new Logger('OrepKeys');
  private readonly unsubscribe: () => void;

  constructor(
    readonly keys: OrepKeys,
    private readonly secrets: SecretSource,
  ) {
    this.unsubscribe = secrets.onChange?.((names) => names.some((n) => LIST_NAMES.has(n)) && this.reload()) ?? (() => undefined);
    this.report();
  }

  onModuleDestroy(): void {
    this.unsubscribe();
  }

  private reload(): void {
    try {
      this.keys.replace(readKeyLists((name) => this.secrets.get(name)));
      this.report();
    } catch (err) {
      this.logger.error(`${err instanceof Error ? err.message : String(err)}; the keys in force are kept`);
    }
  }

  private report(): void {
    const { usingEnvironmentId, usingMobileKey } = this.keys.counts();
    this.logger.log(`client-side keys in force: ${usingEnvironmentId} browser, ${usingMobileKey} mobile`);
  }
}

export const orepKeysHolderFactory: Provider = {
  provide: OrepKeysHolder,
  inject: [APP_CONFIG, OREP_SECRETS],
  useFactory: (config: OrepServerConfig, secrets: SecretSource) => new OrepKeysHolder(startingKeys(config, secrets), secrets),
};
