import { isUuid } from '@flagship/domain';
import { RequestIds } from './request-id';

describe('RequestIds', () => {
  it('makes UUID-shaped ids, all different, from a per-process random prefix', () => {
    const ids = new RequestIds();
    const made = Array.from({ length: 1000 }, () => ids.create());
    expect(new Set(made).size).toBe(1000);
    for (const id of made.slice(0, 5)) expect(isUuid(id)).toBe(true);
    expect(made[0]!.slice(0, 24)).toBe(made[999]!.slice(0, 24));
    expect(new RequestIds().create().slice(0, 24)).not.toBe(made[0]!.slice(0, 24));
  });
});
