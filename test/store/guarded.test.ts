import { describe, expect, it } from 'vitest';
import { bucketOf } from '../../src/gcra/gcra.js';
import { FAILURES_TO_OPEN, guardStore, OPEN_MS } from '../../src/store/guarded.js';
import { createMemoryStore } from '../../src/store/memory.js';
import { type StateStore, StoreUnavailableError } from '../../src/store/types.js';

/** A stamp after every store of this test began. */
const NOW_S = Math.ceil(Date.now() / 1000) + 10;

/** A store whose answers the test switches: working (memory), failing, or never answering. */
function switchable() {
  const memory = createMemoryStore();
  let mode: 'up' | 'down' | 'hang' = 'up';
  let calls = 0;
  const store: StateStore = {
    kind: 'redis',
    ready: Promise.resolve(),
    claimOnce(id, ttl, stampedS) {
      calls++;
      if (mode === 'down') return Promise.reject(new Error('ECONNREFUSED'));
      if (mode === 'hang') return new Promise(() => {});
      return memory.claimOnce(id, ttl, stampedS);
    },
    spend: (id, b) => memory.spend(id, b),
    close: async () => {},
  };
  return {
    store,
    set: (m: typeof mode) => {
      mode = m;
    },
    calls: () => calls,
  };
}

function events() {
  const seen: string[] = [];
  return {
    seen,
    call: (op: string, _s: number, ok: boolean) => seen.push(`${op}:${ok ? 'ok' : 'failed'}`),
    down: () => seen.push('down'),
    up: () => seen.push('up'),
  };
}

describe('guarded store', () => {
  it('times calls out after timeout_ms', async () => {
    const inner = switchable();
    inner.set('hang');
    const store = guardStore(inner.store, 20, events());
    const started = Date.now();
    await expect(store.claimOnce('a', 1000, NOW_S)).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('stops calling after 3 failures in a row, probes once after 5 s, and reports down and up', async () => {
    let now = 0;
    const inner = switchable();
    const ev = events();
    const store = guardStore(inner.store, 50, ev, () => now);
    inner.set('down');
    for (let i = 0; i < FAILURES_TO_OPEN; i++)
      await expect(store.claimOnce(`a${i}`, 1000, NOW_S)).rejects.toThrow();
    expect(ev.seen.filter((e) => e === 'down')).toHaveLength(1);
    const callsWhenOpened = inner.calls();
    await expect(store.claimOnce('b', 1000, NOW_S)).rejects.toThrow(/paused/);
    expect(inner.calls()).toBe(callsWhenOpened);
    now += OPEN_MS;
    await expect(store.claimOnce('c', 1000, NOW_S)).rejects.toThrow(); // the probe, still down
    expect(inner.calls()).toBe(callsWhenOpened + 1);
    await expect(store.claimOnce('d', 1000, NOW_S)).rejects.toThrow(/paused/);
    inner.set('up');
    now += OPEN_MS;
    expect(await store.claimOnce('e', 1000, NOW_S)).toBe('claimed');
    expect(ev.seen.at(-1)).toBe('up');
    expect(await store.spend('x', bucketOf(1, 1, 0))).toMatchObject({ allowed: true });
  });

  it('keeps one breaker per shard: a shard that is down pauses only its own calls', async () => {
    let now = 0;
    const memory = createMemoryStore();
    const down = new Set(['10.0.0.1:6379']);
    let calls = 0;
    // Ids starting with "a" live on the first master, the others on the second.
    const shardOf = (id: string) => (id.startsWith('a') ? '10.0.0.1:6379' : '10.0.0.2:6379');
    const inner: StateStore = {
      kind: 'redis',
      ready: Promise.resolve(),
      claimOnce(id, ttl, stampedS) {
        calls++;
        if (down.has(shardOf(id))) return Promise.reject(new Error('ECONNREFUSED'));
        return memory.claimOnce(id, ttl, stampedS);
      },
      spend: (id, b) => memory.spend(id, b),
      shardOf,
      close: async () => {},
    };
    const ev = events();
    const store = guardStore(inner, 50, ev, () => now);
    for (let i = 0; i < FAILURES_TO_OPEN; i++) {
      await expect(store.claimOnce(`a${i}`, 1000, NOW_S)).rejects.toThrow();
      // The other shard answers in between: its calls do not reset the first one's count.
      expect(await store.claimOnce(`b${i}`, 1000, NOW_S)).toBe('claimed');
    }
    expect(ev.seen.filter((e) => e === 'down')).toHaveLength(1);
    const opened = calls;
    await expect(store.claimOnce('a9', 1000, NOW_S)).rejects.toThrow(/paused/);
    expect(calls).toBe(opened);
    expect(await store.claimOnce('b9', 1000, NOW_S)).toBe('claimed');
    down.clear();
    now += OPEN_MS;
    expect(await store.claimOnce('a10', 1000, NOW_S)).toBe('claimed');
    expect(ev.seen.at(-1)).toBe('up');
  });
});
