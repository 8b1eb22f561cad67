import { describe, expect, it } from 'vitest';
import { median, middleHalf } from '../../bench/median.js';

describe('median', () => {
  it('is the middle value of an odd count, in any order', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([7])).toBe(7);
    expect(median([5, -1, 9, 4, 4])).toBe(4);
  });
  it('is the mean of the two middle values of an even count', () => {
    expect(median([1, 2, 3, 4])).toBe(2.5);
    expect(median([10.2, 9.6, -39.9, 26.9, 4.7, 6.6, 14.4, 18.1, 22.9, -22.4])).toBeCloseTo(9.9, 10);
    expect(median([2, 1])).toBe(1.5);
  });
  it('is NaN for no values, and leaves its input as it was', () => {
    expect(median([])).toBeNaN();
    const xs = [3, 1, 2, 0];
    median(xs);
    expect(xs).toEqual([3, 1, 2, 0]);
  });
});

describe('middleHalf', () => {
  it('is bounded by the medians of the lower and upper halves, in any order', () => {
    expect(middleHalf([10, 1, 9, 2, 8, 3, 7, 4, 6, 5])).toEqual([3, 8]);
    expect(middleHalf([5, 1, 4, 2, 3])).toEqual([1.5, 4.5]);
    expect(middleHalf([-3, 12])).toEqual([-3, 12]);
  });
  it('is NaN for fewer than two values', () => {
    expect(middleHalf([4])).toEqual([Number.NaN, Number.NaN]);
    expect(middleHalf([])).toEqual([Number.NaN, Number.NaN]);
  });
});
