import { retentionPolicy } from './usage-retention';

describe('retentionPolicy', () => {
  const plans = { free: 3, standard: 12, premium: 24 };

  it('removes nothing while the operator has not set a retention', () => {
    expect(retentionPolicy(0, plans)).toBeNull();
  });

  it('drops partitions at the longest plan retention and deletes the rows of plans keeping less', () => {
    expect(retentionPolicy(36, plans)).toEqual({ partitionMonths: 24, shorterPlans: [{ plan: 'free', months: 3 }, { plan: 'standard', months: 12 }] });
  });

  it("caps every plan at the operator's months: partitions go at the operator's, a plan keeping more keeps no more", () => {
    expect(retentionPolicy(6, plans)).toEqual({ partitionMonths: 6, shorterPlans: [{ plan: 'free', months: 3 }] });
    expect(retentionPolicy(2, plans)).toEqual({ partitionMonths: 2, shorterPlans: [] });
  });

  it('without plans, partitions go at the operator months', () => {
    expect(retentionPolicy(5, {})).toEqual({ partitionMonths: 5, shorterPlans: [] });
  });
});
