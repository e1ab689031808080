import { describe, expect, it } from 'vitest';
import { timeAgo } from './relative-time';

describe('timeAgo', () => {
  const now = Date.parse('2026-11-29T12:00:00.000Z');
  it('says a past instant in its largest whole unit', () => {
    expect(timeAgo('2026-11-29T11:59:30.000Z', now)).toBe('just now');
    expect(timeAgo('2026-11-29T11:55:00.000Z', now)).toBe('5 minutes ago');
    expect(timeAgo('2026-11-29T09:00:00.000Z', now)).toBe('3 hours ago');
    expect(timeAgo('2026-11-28T11:00:00.000Z', now)).toBe('yesterday');
    expect(timeAgo('2026-10-20T12:00:00.000Z', now)).toBe('last month');
    expect(timeAgo('2024-11-01T12:00:00.000Z', now)).toBe('2 years ago');
  });
  it('says "just now" for a clock a little ahead of this one', () => {
    expect(timeAgo('2026-11-29T12:00:05.000Z', now)).toBe('just now');
  });
});
