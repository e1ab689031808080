import { commonEnv, loadConfig, portEnv, str } from '@flagship/config';

/** The management API's settings (CONTRACT.md sections 1 to 4). */
export const managementApiEnv = {
  ...commonEnv,
  ...portEnv(3000),
  PUBLIC_BASE_URL: str({ default: '', desc: 'the address clients reach this API at; default http://HOST:PORT' }),
};

export type ManagementApiConfig = ReturnType<typeof loadManagementApiConfig>;

export const loadManagementApiConfig = (env: NodeJS.ProcessEnv) => loadConfig(env, managementApiEnv);
