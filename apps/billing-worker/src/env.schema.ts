import { commonEnv, loadConfig, portEnv } from '@flagship/config';

/** The billing worker's settings (CONTRACT.md section 1). */
export const billingWorkerEnv = { ...commonEnv, ...portEnv(3002) };

export type BillingWorkerConfig = ReturnType<typeof loadBillingWorkerConfig>;

export const loadBillingWorkerConfig = (env: NodeJS.ProcessEnv) => loadConfig(env, billingWorkerEnv);
