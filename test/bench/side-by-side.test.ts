import { describe, expect, it } from 'vitest';
import { pairing } from '../../bench/side-by-side.js';

const rounds = (n: number, count: number, distinct = false) =>
  Array.from({ length: count }, (_, r) => pairing(r, n, distinct));

describe('pairing', () => {
  it('pairs every process of one list with every process of the other, once each in n² rounds', () => {
    const pairs = rounds(3, 9).map((p) => p?.join(','));
    expect(new Set(pairs).size).toBe(9);
    expect(pairs.slice(0, 3)).toEqual(['0,0', '1,1', '2,2']);
  });

  it('with one process a side, pairs the two every round', () => {
    expect(rounds(1, 3)).toEqual([
      [0, 0],
      [0, 0],
      [0, 0],
    ]);
  });

  it('from one list, never pairs a process with itself and covers every ordered pair in n(n−1) rounds', () => {
    const pairs = rounds(3, 12, true);
    for (const p of pairs) expect(p?.[0]).not.toBe(p?.[1]);
    expect(new Set(pairs.slice(0, 6).map((p) => p?.join(','))).size).toBe(6);
    expect(rounds(2, 4, true)).toEqual([
      [0, 1],
      [1, 0],
      [0, 1],
      [1, 0],
    ]);
  });

  it('from one list of one process, has no pair', () => {
    expect(pairing(0, 1, true)).toBeNull();
  });
});
