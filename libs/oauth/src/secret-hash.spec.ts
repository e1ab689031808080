import { dummySecretHash, hashSecret, verifySecret } from './secret-hash';

describe('secret hashing', () => {
  it('verifies the right secret and refuses others', async () => {
    const h = await hashSecret('correct horse battery staple');
    expect(h).toMatch(/^scrypt\$16384\$8\$1\$[\w-]{22}\$[\w-]{43}$/);
    expect(await verifySecret('correct horse battery staple', h)).toBe(true);
    expect(await verifySecret('correct horse battery stapler', h)).toBe(false);
  });

  it('salts: the same secret hashes differently', async () => {
    expect(await hashSecret('x')).not.toBe(await hashSecret('x'));
  });

  it('refuses malformed hashes and the dummy', async () => {
    expect(await verifySecret('x', 'plain')).toBe(false);
    expect(await verifySecret('x', 'scrypt$0$8$1$aa$bb')).toBe(false);
    expect(await verifySecret('', dummySecretHash())).toBe(false);
  });

  it('hashes at a given cost, records it, and checks a hash at the cost it records', async () => {
    const cheap = { N: 1024, r: 8, p: 1 };
    const h = await hashSecret('s3cret', cheap);
    expect(h).toMatch(/^scrypt\$1024\$8\$1\$/);
    expect(await verifySecret('s3cret', h)).toBe(true);
    expect(await verifySecret('s3cret!', h)).toBe(false);
    // The dummy an unknown caller is checked against costs what a real hash of that cost does.
    expect(dummySecretHash(cheap)).toMatch(/^scrypt\$1024\$8\$1\$/);
    expect(dummySecretHash()).toMatch(/^scrypt\$16384\$8\$1\$/);
  });
});
