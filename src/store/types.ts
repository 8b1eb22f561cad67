import type { Bucket, GcraVerdict } from '../gcra/gcra.js';

/**
 * Where single-use digests and rate-limit buckets live: in this process, in the primary of a
 * worker pool (over IPC) or in Redis. Every call is one round trip, atomic in the store.
 */
export interface StateStore {
  /** Which store this is, for logs and metrics. */
  readonly kind: 'memory' | 'ipc' | 'redis';
  /** When the store began, where that is fixed (memory, a pool primary's memory). */
  readonly epochMs?: number;
  /** Settles once the store first answers (or fails to): start waits on it, within a bound. */
  readonly ready: Promise<void>;
  /**
   * Records `id` for `ttlMs` unless it is recorded already (`replayed`) or was stamped (`stampedS`,
   * unix seconds) before the store began: a store that began again has forgotten what was used
   * before (`stale`, CONTRACT §9).
   */
  claimOnce(id: string, ttlMs: number, stampedS: number): Promise<Claim>;
  /** One GCRA step on bucket `id`. */
  spend(id: string, bucket: Bucket): Promise<GcraVerdict>;
  close(): Promise<void>;
  /**
   * A Redis Cluster: the master (its address) that a call for `id` goes to now, so that a shard
   * that is down pauses only its own calls (guarded.ts keeps one breaker per shard).
   */
  shardOf?(id: string, op: 'claim' | 'spend'): string;
  /** Redis: `listener` runs when a connection (a new master's included) is ready to answer. */
  onConnected?(listener: () => void): void;
}

/** What a single-use claim found. */
export type Claim = 'claimed' | 'replayed' | 'stale';

/** Whether a digest stamped at `stampedS` (whole seconds) may have been used before `epochMs`. */
export function stampedBefore(stampedS: number, epochMs: number): boolean {
  return stampedS * 1000 < epochMs;
}

/** A store call that failed or took longer than `state.redis.timeout_ms`. */
export class StoreUnavailableError extends Error {
  constructor(reason: string) {
    super(`state store unavailable: ${reason}`);
    this.name = 'StoreUnavailableError';
  }
}
