import { DUMMY_SECRET_HASH, hashSecret, verifySecret } from './secret-hash';

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
    expect(await verifySecret('', DUMMY_SECRET_HASH)).toBe(false);
  });
});
