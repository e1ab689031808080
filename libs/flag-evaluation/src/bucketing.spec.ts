import { createHash } from 'node:crypto';

import { bucketValue } from './index';

/** LaunchDarkly's bucket, computed here independently of the library. */
function expectedBucket(hashInput: string): number {
  const hex = createHash('sha1').update(hashInput, 'utf8').digest('hex');
  return parseInt(hex.slice(0, 15), 16) / Number('0xFFFFFFFFFFFFFFF');
}

describe('bucketValue', () => {
  it.each([
    ['userKeyA', 0.42157587],
    ['userKeyB', 0.6708485],
    ['userKeyC', 0.10343106],
  ])('matches the contract check vector for %s with salt saltyA', (key, bucket) => {
    expect(bucketValue('hashKey', 'saltyA', key)).toBeCloseTo(bucket, 7);
  });

  it.each([
    ['userKeyA', 0.09801207],
    ['userKeyB', 0.14483777],
    ['userKeyC', 0.9242641],
  ])('matches the contract check vector for %s with seed 61', (key, bucket) => {
    expect(bucketValue('hashKey', 'saltyA', key, 61)).toBeCloseTo(bucket, 7);
  });

  it('equals an independent SHA-1 computation bit for bit, with and without a seed', () => {
    for (let i = 0; i < 2000; i++) {
      const key = `user-${i}-é☃`;
      expect(bucketValue('flag.key', 'salt', key)).toBe(expectedBucket(`flag.key.salt.${key}`));
      expect(bucketValue('flag.key', 'salt', key, 1234 + i)).toBe(expectedBucket(`${1234 + i}.${key}`));
    }
  });

  it('hashes integers as their decimal string', () => {
    expect(bucketValue('f', 's', 12345)).toBe(expectedBucket('f.s.12345'));
    expect(bucketValue('f', 's', -7)).toBe(expectedBucket('f.s.-7'));
    expect(bucketValue('f', 's', 12345)).toBe(bucketValue('f', 's', '12345'));
  });

  it.each([[1.5], [true], [null], [undefined], [{ a: 1 }], [['a']], [Number.NaN]])(
    'puts the non-bucketable value %p in bucket 0',
    (value) => {
      expect(bucketValue('f', 's', value)).toBe(0);
    },
  );

  it('treats seed 0 (and a non-finite seed) as no seed', () => {
    expect(bucketValue('hashKey', 'saltyA', 'userKeyA', 0)).toBe(bucketValue('hashKey', 'saltyA', 'userKeyA'));
    expect(bucketValue('hashKey', 'saltyA', 'userKeyA', Number.NaN)).toBe(bucketValue('hashKey', 'saltyA', 'userKeyA'));
  });

  it('makes a seed replace flag key and salt', () => {
    expect(bucketValue('one', 'a', 'k', 99)).toBe(bucketValue('two', 'b', 'k', 99));
    expect(bucketValue('one', 'a', 'k')).not.toBe(bucketValue('two', 'b', 'k'));
  });

  it('stays within [0, 1] and spreads keys evenly', () => {
    const deciles = new Array<number>(10).fill(0);
    for (let i = 0; i < 10_000; i++) {
      const b = bucketValue('spread', 'spread', `k${i}`);
      expect(b).toBeGreaterThanOrEqual(0);
      expect(b).toBeLessThanOrEqual(1);
      deciles[Math.min(9, Math.floor(b * 10))]! += 1;
    }
    // 1000 expected per decile; 5 standard deviations is about 150.
    for (const count of deciles) expect(Math.abs(count - 1000)).toBeLessThan(150);
  });
});
