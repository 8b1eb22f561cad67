import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bucketOf, gcra } from '../../src/gcra/gcra.js';

/** Runs requests at the given times (µs) through one bucket; the verdicts in order. */
function run(times: readonly number[], limit: number, windowS: number, burst: number) {
  const bucket = bucketOf(limit, windowS, burst);
  let tat: number | undefined;
  return times.map((t) => {
    const v = gcra(tat, t, bucket);
    if (v.allowed) tat = v.tatUs;
    return v;
  });
}

describe('GCRA', () => {
  it('admits limit + burst at once from idle, then one every window / limit', () => {
    const burst = run(Array(25).fill(0), 120, 60, 20); // T = 0.5 s
    expect(burst.every((v) => v.allowed)).toBe(true);
    const all = run(Array(150).fill(0), 120, 60, 20);
    expect(all.filter((v) => v.allowed)).toHaveLength(140);
    expect(all[0]?.remaining).toBe(139);
    expect(all[139]).toMatchObject({ allowed: true, remaining: 0, waitUs: 500_000 });
    expect(all[140]).toMatchObject({ allowed: false, remaining: 0, waitUs: 500_000 });
    // half a second later exactly one more, then none
    const later = run([...Array(140).fill(0), 500_000, 500_000], 120, 60, 20);
    expect(later.slice(140).map((v) => v.allowed)).toEqual([true, false]);
  });

  it('says how long until the bucket is full again while requests are left', () => {
    const [first, second] = run([0, 0], 10, 10, 0); // T = 1 s
    expect(first).toMatchObject({ allowed: true, remaining: 9, waitUs: 1_000_000 });
    expect(second).toMatchObject({ allowed: true, remaining: 8, waitUs: 2_000_000 });
  });

  it('never admits more than limit + burst + elapsed / T in any stretch of time (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 50 }),
        fc.integer({ min: 1, max: 10 }),
        fc.integer({ min: 0, max: 10 }),
        fc.array(fc.integer({ min: 0, max: 5_000_000 }), { minLength: 1, maxLength: 300 }),
        (limit, windowS, burst, gaps) => {
          const times: number[] = [];
          let t = 0;
          for (const g of gaps) {
            t += g;
            times.push(t);
          }
          const verdicts = run(times, limit, windowS, burst);
          const admitted = times.filter((_, i) => verdicts[i]?.allowed);
          const T = bucketOf(limit, windowS, burst).emissionUs;
          for (let i = 0; i < admitted.length; i++) {
            for (let j = i; j < admitted.length; j++) {
              const span = (admitted[j] as number) - (admitted[i] as number);
              expect(j - i + 1).toBeLessThanOrEqual(limit + burst + Math.floor(span / T));
            }
          }
          for (const v of verdicts) expect(v.remaining).toBeGreaterThanOrEqual(0);
        },
      ),
      { numRuns: 200 },
    );
  });
});
