import { newWebhookSecret, WebhookSecretBox } from './standard-webhooks';

describe('WebhookSecretBox', () => {
  const box = new WebhookSecretBox(Buffer.alloc(32, 1).toString('base64'));

  it('opens what it sealed, and seals the same secret differently each time', () => {
    const secret = newWebhookSecret();
    const [a, b] = [box.seal(secret), box.seal(secret)];
    expect(a).not.toBe(b);
    expect(a).not.toContain(secret.slice(6, 20));
    expect([box.open(a), box.open(b)]).toEqual([secret, secret]);
  });

  it('refuses a sealed secret altered, or sealed under another key', () => {
    const sealed = box.seal(newWebhookSecret());
    const parts = sealed.split('.');
    const flipped = [...parts.slice(0, 3), (parts[3]![0] === 'A' ? 'B' : 'A') + parts[3]!.slice(1)].join('.');
    expect(() => box.open(flipped)).toThrow();
    expect(() => new WebhookSecretBox(Buffer.alloc(32, 2).toString('base64')).open(sealed)).toThrow();
    expect(() => box.open('plain')).toThrow('not a sealed webhook secret');
  });

  it('needs a key of 32 bytes', () => {
    expect(() => new WebhookSecretBox(Buffer.alloc(16).toString('base64'))).toThrow('32 bytes');
  });
});
