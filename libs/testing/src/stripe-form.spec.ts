import { parseStripeForm } from './stripe-form';

describe("parseStripeForm (Stripe's bracketed form encoding)", () => {
  it('decodes nested objects, arrays and empty-bracket arrays as stripe-node writes them', () => {
    const body = 'mode=subscription&line_items[0][price]=price_1&line_items[0][quantity]=1&metadata[tenantId]=t%201&expand[]=a&expand[]=b&x=a+b';
    expect(parseStripeForm(body)).toEqual({
      mode: 'subscription',
      line_items: [{ price: 'price_1', quantity: '1' }],
      metadata: { tenantId: 't 1' },
      expand: ['a', 'b'],
      x: 'a b',
    });
  });

  it('refuses prototype keys and absurd nesting', () => {
    expect(() => parseStripeForm('metadata[__proto__][x]=1')).toThrow();
    expect(() => parseStripeForm(`a${'[b]'.repeat(10)}=1`)).toThrow(/nested/);
    expect(parseStripeForm('')).toEqual({});
  });
});
