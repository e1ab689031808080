import { commonEnv, loadConfig, port, str } from '@flagship/config';

/** The remote evaluation server's settings (seed section 4, CONTRACT.md section 6). */
export const orepServerEnv = {
  ...commonEnv,
  OREP_HOST: str({ default: '127.0.0.1', desc: 'bind address' }),
  OREP_PORT: port({ default: 8016 }),
  OREP_AUTH_TOKEN: str({ desc: 'the bearer token callers must send' }),
  OREP_TENANT_ID: str({ default: '' }),
  OREP_ENVIRONMENT: str({ default: 'production' }),
  OREP_FLAGS_FILE: str({ default: '', desc: 'serve flags from this JSON file instead of Postgres' }),
};

export type OrepServerConfig = ReturnType<typeof loadOrepServerConfig>;

export const loadOrepServerConfig = (env: NodeJS.ProcessEnv) => loadConfig(env, orepServerEnv);
