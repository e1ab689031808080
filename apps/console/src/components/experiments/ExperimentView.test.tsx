import { describe, expect, it } from 'vitest';
import type { ExperimentReport } from '@flagship/sdk';
import { differenceText, seriesOf } from './ExperimentView';

describe('experiment view helpers', () => {
  it('writes a difference with its interval in the unit of its figure', () => {
    expect(differenceText({ estimate: 0.04, lower: 0.0037, upper: 0.0835, method: 'newcombe-hybrid-score' }, 'points')).toBe('+4.00 pts (0.37 to 8.35)');
    expect(differenceText({ estimate: -41.4, lower: -191.7, upper: 108.9, method: 'maritz-jarrett' }, 'ms')).toBe('-41 ms (-192 to 109)');
    expect(differenceText({ estimate: 0.5, lower: 0.1, upper: 0.9, method: 'welch-t' }, 'score')).toBe('+0.50 (0.10 to 0.90)');
    expect(differenceText(undefined, 'ms')).toBe('—');
  });

  it('turns the series into one row per bucket with a column per variation, named as the report names them', () => {
    const report = {
      variations: [
        { recorded: 'v-small', name: 'small' },
        { recorded: null, name: '(route default)' },
      ],
      series: {
        bucketSeconds: 3600,
        points: [
          { at: '2026-11-29T10:00:00.000Z', variationId: null, recorded: 'v-small', requests: 5, errors: 0, debit: 1, latencyP95Ms: 300 },
          { at: '2026-11-29T09:00:00.000Z', variationId: null, recorded: null, requests: 2, errors: 0, debit: 1, latencyP95Ms: null },
          { at: '2026-11-29T10:00:00.000Z', variationId: null, recorded: null, requests: 1, errors: 0, debit: 1, latencyP95Ms: 90 },
        ],
      },
    } as unknown as ExperimentReport;
    expect(seriesOf(report, 'requests')).toEqual({
      names: ['small', '(route default)'],
      data: [
        { at: '2026-11-29 09:00', '(route default)': 2 },
        { at: '2026-11-29 10:00', small: 5, '(route default)': 1 },
      ],
    });
    expect(seriesOf(report, 'latencyP95Ms').data[0]).toEqual({ at: '2026-11-29 09:00', '(route default)': null });
  });
});
