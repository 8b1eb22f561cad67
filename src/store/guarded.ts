import type { Bucket, GcraVerdict } from '../gcra/gcra.js';
import { type StateStore, StoreUnavailableError } from './types.js';

/** What a guarded store reports: each call, and the store going down and coming back. */
export interface StoreEvents {
  call(op: 'claim' | 'spend', seconds: number, ok: boolean): void;
  down(reason: string): void;
  up(): void;
}

/** CONTRACT §8: after this many failed or timed-out calls in a row, the store is left alone… */
export const FAILURES_TO_OPEN = 3;
/** …for this long; then one call probes it. */
export const OPEN_MS = 5_000;

/** One breaker's state: the whole store's, or (a Redis Cluster) one shard's. */
interface Breaker {
  failures: number;
  openUntil: number;
  probing: boolean;
  down: boolean;
  earlyProbe: boolean;
}

const closed = (): Breaker => ({ failures: 0, openUntil: 0, probing: false, down: false, earlyProbe: false });

/**
 * Bounds every call of `inner` by `timeoutMs` and keeps requests from waiting on a store that is
 * down: a circuit breaker that opens after 3 failures in a row and lets one probe through every
 * 5 s. A call refused by it, failed or too slow rejects with StoreUnavailableError; the caller
 * applies `on_store_error`. A store that says it connected again (a Redis back, the new master
 * after a failover, a changed cluster slot map) is probed at once instead, once per pause.
 * A store with shards (`shardOf`: a Redis Cluster) has one breaker per master, so a master that
 * is down pauses only the calls its slots would take; a slot served by another master since (a
 * failover) is called at once. `down` reports the first shard down, `up` the last one back.
 */
export function guardStore(
  inner: StateStore,
  timeoutMs: number,
  events: StoreEvents,
  nowMs: () => number = Date.now,
): StateStore {
  const breakers = new Map<string, Breaker>();
  let downCount = 0;
  const breakerOf = (shard: string): Breaker => {
    let b = breakers.get(shard);
    if (b === undefined) {
      b = closed();
      breakers.set(shard, b);
    }
    return b;
  };
  inner.onConnected?.(() => {
    for (const b of breakers.values()) {
      if (b.failures < FAILURES_TO_OPEN || b.earlyProbe) continue;
      b.earlyProbe = true;
      b.openUntil = 0;
    }
  });

  async function call<T>(op: 'claim' | 'spend', shard: string, run: () => Promise<T>): Promise<T> {
    const b = breakerOf(shard);
    if (b.failures >= FAILURES_TO_OPEN) {
      if (b.probing || nowMs() < b.openUntil)
        throw new StoreUnavailableError('paused after repeated failures');
      b.probing = true;
    }
    const started = performance.now();
    try {
      const value = await withTimeout(run(), timeoutMs);
      events.call(op, (performance.now() - started) / 1000, true);
      b.failures = 0;
      b.probing = false;
      if (b.down) {
        b.down = false;
        downCount--;
        if (downCount === 0) events.up();
      }
      return value;
    } catch (err) {
      events.call(op, (performance.now() - started) / 1000, false);
      b.failures++;
      b.probing = false;
      const reason = err instanceof Error ? err.message : 'unknown error';
      if (b.failures >= FAILURES_TO_OPEN) {
        b.openUntil = nowMs() + OPEN_MS;
        b.earlyProbe = false;
        if (!b.down) {
          b.down = true;
          downCount++;
          if (downCount === 1) events.down(reason);
        }
      }
      throw err instanceof StoreUnavailableError ? err : new StoreUnavailableError(reason);
    }
  }

  const shardOf = inner.shardOf?.bind(inner);
  if (shardOf !== undefined) {
    // A master gone from the slot map (failed over, or its slots moved away) is down no more.
    const sweep = setInterval(() => {
      for (const [shard, b] of breakers) {
        if (!b.down || shard === '' || b.probing) continue;
        if (nowMs() - b.openUntil < 2 * OPEN_MS) continue;
        breakers.delete(shard);
        downCount--;
        if (downCount === 0) events.up();
      }
    }, OPEN_MS);
    sweep.unref();
  }
  const shardFor = (id: string, op: 'claim' | 'spend') => (shardOf === undefined ? '' : shardOf(id, op));

  return {
    kind: inner.kind,
    ready: inner.ready,
    claimOnce: (id: string, ttlMs: number, stampedS: number) =>
      call('claim', shardFor(id, 'claim'), () => inner.claimOnce(id, ttlMs, stampedS)),
    spend: (id: string, bucket: Bucket): Promise<GcraVerdict> =>
      call('spend', shardFor(id, 'spend'), () => inner.spend(id, bucket)),
    close: () => inner.close(),
  };
}

/** `promise`, or StoreUnavailableError once `ms` passed without its answer. */
export function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new StoreUnavailableError(`no answer within ${ms} ms`)), ms);
    promise.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e);
      },
    );
  });
}
