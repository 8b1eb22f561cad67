import { describe, expect, it } from 'vitest';
import { bucketOf } from '../../src/gcra/gcra.js';
import { createMemoryStore } from '../../src/store/memory.js';

describe('memory store', () => {
  it('claims an id once until its TTL has passed', async () => {
    let now = 0;
    const store = createMemoryStore(() => now);
    expect(await store.claimOnce('a', 1_000, 0)).toBe('claimed');
    expect(await store.claimOnce('a', 1_000, 0)).toBe('replayed');
    expect(await store.claimOnce('b', 1_000, 0)).toBe('claimed');
    now = 1_000_000;
    expect(await store.claimOnce('a', 1_000, 0)).toBe('claimed');
  });

  it('refuses as stale what was stamped before it began: it cannot know what was used then', () => {
    const store = createMemoryStore(() => 5_500_000);
    expect(store.claimOnceNow('a', 1_000, 4)).toBe('stale');
    expect(store.claimOnceNow('a', 1_000, 5)).toBe('stale');
    expect(store.claimOnceNow('a', 1_000, 6)).toBe('claimed');
  });

  it('forgets claims and full buckets once expired, so it follows one window of traffic', () => {
    let now = 0;
    const store = createMemoryStore(() => now);
    const bucket = bucketOf(10, 1, 0);
    for (let i = 0; i < 1000; i++) {
      store.claimOnceNow(`d${i}`, 1_000, 0);
      store.spendNow(`ip:${i}`, bucket);
    }
    expect(store.size).toBe(2000);
    now = 60_000_000;
    expect(store.claimOnceNow('late', 1_000, 0)).toBe('claimed');
    expect(store.size).toBe(1);
  });

  it('spends from a bucket per id', () => {
    const store = createMemoryStore(() => 0);
    const bucket = bucketOf(2, 60, 0);
    expect([1, 2, 3].map(() => store.spendNow('x', bucket).allowed)).toEqual([true, true, false]);
    expect(store.spendNow('y', bucket).allowed).toBe(true);
  });
});
