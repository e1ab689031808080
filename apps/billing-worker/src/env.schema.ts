import { commonEnv, loadConfig, makeValidator, portEnv } from '@flagship/config';

/** A whole number of seconds (or rows) above zero: 0 would spin a job or settle rows still in flight. */
const positiveInteger = makeValidator<number>((input) => {
  const n = Number(input);
  if (!/^\d+$/.test(input.trim()) || !Number.isSafeInteger(n) || n < 1) throw new Error(`Invalid positive integer input: "${input}"`);
  return n;
});

/** The billing worker's settings (CONTRACT.md section 1). */
export const billingWorkerEnv = {
  ...commonEnv,
  ...portEnv(3002),
  RECONCILE_PENDING_AFTER_S: positiveInteger({
    default: 600,
    desc: 'a pending usage row older than this is abandoned and its reservation released; keep it above the gateway\'s longest request',
  }),
  RECONCILE_INTERVAL_S: positiveInteger({ default: 60, desc: 'seconds between passes of the usage reconciler' }),
  RECONCILE_BATCH_SIZE: positiveInteger({ default: 500, desc: 'pending rows settled per transaction' }),
};

export type BillingWorkerConfig = ReturnType<typeof loadBillingWorkerConfig>;

export const loadBillingWorkerConfig = (env: NodeJS.ProcessEnv) => loadConfig(env, billingWorkerEnv);
