/**
 * The fake Stripe API (libs/testing) as a process, so checkout and portal links work locally:
 * `npm start` runs it when STRIPE_SECRET_KEY is unset, docker/compose.yaml as its `fake-stripe`
 * service (the image's `fakes` target runs the compiled file, dist/tools/dev/fake-stripe.js).
 *
 *   TS_NODE_PROJECT=tsconfig.json node -r ts-node/register/transpile-only tools/dev/fake-stripe.ts
 *
 * Settings: FAKE_STRIPE_PORT (default 0: any free port), FAKE_STRIPE_HOST (bind address, default
 * 127.0.0.1; 0.0.0.0 in a container), FAKE_STRIPE_API_KEY (default sk_test_local_fake),
 * FAKE_STRIPE_WEBHOOK_URL and FAKE_STRIPE_WEBHOOK_SECRET (events are signed with it and delivered
 * there), FAKE_STRIPE_PUBLIC_URL (the base of the Checkout and portal links a browser opens; default
 * the address it listens on), FAKE_STRIPE_API_URL (the STRIPE_API_BASE it reports, the address the
 * apps call; default the same). The three plan prices have fixed ids, `price_free`,
 * `price_standard` and `price_premium`, so a configuration can name them without a seeding step.
 * Prints one line `fake stripe settings {json}` with the STRIPE_* variables the apps need, but never
 * its keys: STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET are what its starter gave it as
 * FAKE_STRIPE_API_KEY and FAKE_STRIPE_WEBHOOK_SECRET (logs are kept and shared; keys are not). Its
 * state lives in memory: a restart forgets customers and subscriptions the database still names.
 */
// The file itself, not @flagship/testing: tsconfig.fakes.json compiles the fakes for the image
// without the rest of the testing lib.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { FakeStripe } from '../../libs/testing/src/fake-stripe';

/** Plan prices: [plan, monthly amount in cents]; the id is `price_<plan>`. */
const PLANS: Array<[string, number]> = [
  ['free', 0],
  ['standard', 1900],
  ['premium', 4900],
];

async function main(): Promise<void> {
  const env = process.env;
  const apiKey = env.FAKE_STRIPE_API_KEY || 'sk_test_local_fake';
  const webhookSecret = env.FAKE_STRIPE_WEBHOOK_SECRET || 'whsec_local_fake';
  const fake = await FakeStripe.start({
    port: Number(env.FAKE_STRIPE_PORT ?? 0),
    host: env.FAKE_STRIPE_HOST || '127.0.0.1',
    publicUrl: env.FAKE_STRIPE_PUBLIC_URL || undefined,
    apiKey,
    webhookUrl: env.FAKE_STRIPE_WEBHOOK_URL || undefined,
    webhookSecret,
  });
  const settings: Record<string, string> = { STRIPE_API_BASE: env.FAKE_STRIPE_API_URL || fake.url };
  for (const [plan, cents] of PLANS) {
    const price = fake.addPrice({ id: `price_${plan}`, productName: `Flagship ${plan[0].toUpperCase()}${plan.slice(1)}`, unitAmount: cents });
    settings[`STRIPE_PRICE_${plan.toUpperCase()}`] = price['id'] as string;
  }
  process.stdout.write(`fake stripe settings ${JSON.stringify(settings)}\n`);
  const stop = (): void => {
    void fake.close().then(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`fake stripe: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
