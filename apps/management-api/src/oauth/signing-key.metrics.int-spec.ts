/**
 * The signing key's gauges (the key-expiry alert's), on management-api's real /metrics, against the
 * lease Postgres holds in `signing_keys`: for a configured key, across a rotation refused and one
 * accepted.
 */
import { generateKeyPairSync } from 'node:crypto';
import { parseSigningKey, SigningKeyService, type SecretSource } from '@flagship/oauth';
import { http, waitFor } from '@flagship/testing';
import { ManagementApiFixture } from '../testing/management-api.fixture';

jest.setTimeout(60_000);

/** A Secrets-Manager-like source of OAUTH_SIGNING_KEY that the test rotates. */
class RotatingSecrets implements SecretSource {
  private readonly listeners = new Set<(names: string[]) => void>();
  constructor(private value: string) {}
  get(name: string): string | undefined {
    return name === 'OAUTH_SIGNING_KEY' ? this.value : undefined;
  }
  onChange(listener: (names: string[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  rotate(value: string): void {
    this.value = value;
    for (const l of this.listeners) l(['OAUTH_SIGNING_KEY']);
  }
}

const newPem = () => generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

describe('signing key gauges (real Postgres, management-api)', () => {
  const first = newPem();
  const secrets = new RotatingSecrets(first);
  let f: ManagementApiFixture;

  const metric = async (name: string): Promise<number | undefined> => {
    const text = (await http(`${f.metricsUrl}/metrics`)).text;
    const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
    return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
  };
  /** The lease's end of `kid` in signing_keys, in Unix seconds. */
  const lease = async (kid: string): Promise<number> =>
    Number((await f.sql(`SELECT extract(epoch FROM retired_at)::float8 AS t FROM signing_keys WHERE kid = $1`, [kid])).rows[0].t);

  beforeAll(async () => {
    f = await ManagementApiFixture.start({}, {}, secrets);
  });
  afterAll(async () => {
    await f?.stop();
  });

  it("exports the configured key's lease as Postgres holds it, and follows its renewal", async () => {
    const kid = parseSigningKey(first, 'OAUTH_SIGNING_KEY').kid;
    const exported = await metric('oauth_signing_key_lease_expiry_timestamp_seconds');
    expect(exported).toBeCloseTo(await lease(kid), 3);
    // The lease outlasts the tokens it signed: an hour and more ahead.
    expect(exported! - Date.now() / 1000).toBeGreaterThan(3600);
    expect(await metric('oauth_signing_key_secret_refused')).toBe(0);

    // Renewal pushes the lease forward (by Postgres' clock); the gauge follows.
    await new Promise((r) => setTimeout(r, 20));
    await f.svc.app.get(SigningKeyService).renew();
    const renewed = await metric('oauth_signing_key_lease_expiry_timestamp_seconds');
    expect(renewed).toBeGreaterThan(exported!);
    expect(renewed).toBeCloseTo(await lease(kid), 3);
  });

  /** The gauge once it shows `kid`'s lease as Postgres holds it (a rotation also renews in the background, so it may move once more). */
  const showsLeaseOf = (kid: string) =>
    waitFor(async () => Math.abs((await metric('oauth_signing_key_lease_expiry_timestamp_seconds'))! - (await lease(kid))) < 0.0005, 5000, 20);

  it('says when a rotated secret is refused (the previous key keeps signing), and clears it once a usable key arrives', async () => {
    const keys = f.svc.app.get(SigningKeyService);
    secrets.rotate('not a key');
    await keys.current();
    expect(await metric('oauth_signing_key_secret_refused')).toBe(1);
    await showsLeaseOf(parseSigningKey(first, 'OAUTH_SIGNING_KEY').kid);

    const second = newPem();
    secrets.rotate(second);
    await keys.current();
    expect(await metric('oauth_signing_key_secret_refused')).toBe(0);
    await showsLeaseOf(parseSigningKey(second, 'OAUTH_SIGNING_KEY').kid);
  });
});
