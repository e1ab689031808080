/**
 * The fake Stripe API (libs/testing) as a process, so checkout and portal links work locally:
 * `npm start` runs it when STRIPE_SECRET_KEY is unset.
 *
 *   TS_NODE_PROJECT=tsconfig.json node -r ts-node/register/transpile-only tools/dev/fake-stripe.ts
 *
 * Creates the three plan prices and a portal-ready setup, delivers events signed with
 * FAKE_STRIPE_WEBHOOK_SECRET to FAKE_STRIPE_WEBHOOK_URL, and prints one line
 * `fake stripe settings {json}` with the STRIPE_* variables the apps need. Its state lives in memory:
 * a restart forgets customers and subscriptions the database still names.
 */
import { FakeStripe } from '../../libs/testing/src/fake-stripe';

async function main(): Promise<void> {
  const env = process.env;
  const apiKey = 'sk_test_local_fake';
  const webhookSecret = env.FAKE_STRIPE_WEBHOOK_SECRET || 'whsec_local_fake';
  const fake = await FakeStripe.start({ port: Number(env.FAKE_STRIPE_PORT ?? 0), apiKey, webhookUrl: env.FAKE_STRIPE_WEBHOOK_URL, webhookSecret });
  const stripe = fake.client();
  const price = async (name: string, cents: number) => {
    const product = await stripe.products.create({ name: `Flagship ${name}` });
    return (await stripe.prices.create({ product: product.id, currency: 'usd', unit_amount: cents, recurring: { interval: 'month' } })).id;
  };
  const settings = {
    STRIPE_API_BASE: fake.url,
    STRIPE_SECRET_KEY: apiKey,
    STRIPE_WEBHOOK_SECRET: webhookSecret,
    STRIPE_PRICE_FREE: await price('Free', 0),
    STRIPE_PRICE_STANDARD: await price('Standard', 1900),
    STRIPE_PRICE_PREMIUM: await price('Premium', 4900),
  };
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
