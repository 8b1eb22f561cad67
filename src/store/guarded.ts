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

/**
 * Bounds every call of `inner` by `timeoutMs` and keeps requests from waiting on a store that is
 * down: a circuit breaker that opens after 3 failures in a row and lets one probe through every
 * 5 s. A call refused by it, failed or too slow rejects with StoreUnavailableError; the caller
 * applies `on_store_error`. A store that says it connected again (a Redis back, the new master
 * after a failover) is probed at once instead, once per pause.
 */
export function guardStore(
  inner: StateStore,
  timeoutMs: number,
  events: StoreEvents,
  nowMs: () => number = Date.now,
): StateStore {
  let failures = 0;
  let openUntil = 0;
  let probing = false;
  let down = false;
  let earlyProbe = false;
  inner.onConnected?.(() => {
    if (failures < FAILURES_TO_OPEN || earlyProbe) return;
    earlyProbe = true;
    openUntil = 0;
  });

  async function call<T>(op: 'claim' | 'spend', run: () => Promise<T>): Promise<T> {
    if (failures >= FAILURES_TO_OPEN) {
      if (probing || nowMs() < openUntil) throw new StoreUnavailableError('paused after repeated failures');
      probing = true;
    }
    const started = performance.now();
    try {
      const value = await withTimeout(run(), timeoutMs);
      events.call(op, (performance.now() - started) / 1000, true);
      failures = 0;
      probing = false;
      if (down) {
        down = false;
        events.up();
      }
      return value;
    } catch (err) {
      events.call(op, (performance.now() - started) / 1000, false);
      failures++;
      probing = false;
      const reason = err instanceof Error ? err.message : 'unknown error';
      if (failures >= FAILURES_TO_OPEN) {
        openUntil = nowMs() + OPEN_MS;
        earlyProbe = false;
        if (!down) {
          down = true;
          events.down(reason);
        }
      }
      throw err instanceof StoreUnavailableError ? err : new StoreUnavailableError(reason);
    }
  }

  return {
    kind: inner.kind,
    ready: inner.ready,
    claimOnce: (id: string, ttlMs: number, stampedS: number) =>
      call('claim', () => inner.claimOnce(id, ttlMs, stampedS)),
    spend: (id: string, bucket: Bucket): Promise<GcraVerdict> => call('spend', () => inner.spend(id, bucket)),
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
