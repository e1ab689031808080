import { customCleanEnv, EnvMissingError, type CleanedEnv } from 'envalid';

/** A bad or missing setting; its message is one line naming every variable at fault. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/**
 * Validates the environment against one app's schema. Unlike envalid's default reporter it never
 * exits the process itself: the caller (main.ts) prints the one line and exits, tests assert on it.
 */
export function loadConfig<S extends Record<string, unknown>>(env: NodeJS.ProcessEnv, specs: S): CleanedEnv<S> {
  // customCleanEnv with a plain copy: envalid's strict proxy throws on any unknown property read,
  // which Nest's lifecycle probing (onModuleInit...) does on every provider value.
  return customCleanEnv(env, specs, (cleaned) => ({ ...cleaned }), {
    reporter: ({ errors }) => {
      const problems = Object.entries(errors as Record<string, Error | undefined>)
        .filter((e): e is [string, Error] => e[1] !== undefined)
        .map(([name, err]) =>
          err instanceof EnvMissingError ? `${name} is required` : `${name} is invalid (${err.message.replace(/\s+/g, ' ').trim()})`,
        );
      if (problems.length > 0) throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
    },
  }) as CleanedEnv<S>;
}

/** Replaces the values of secret settings so a config object can be logged. */
export function maskSecrets<T extends object>(config: T, secretNames: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(config)) {
    out[k] = secretNames.includes(k) || /SECRET|PASSWORD|TOKEN|_KEYS?$/.test(k) ? (v === undefined || v === '' ? v : '***') : v;
  }
  return out;
}

/** The entry point of every main.ts: a ConfigError is one line on stderr and exit code 1. */
export async function runMain(main: () => Promise<unknown>): Promise<void> {
  try {
    await main();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
    } else {
      process.stderr.write(`fatal: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
    }
    process.exit(1);
  }
}
