import type { Bucket, GcraVerdict } from '../gcra/gcra.js';

/**
 * Where single-use digests and rate-limit buckets live: in this process, in the primary of a
 * worker pool (over IPC) or in Redis. Every call is one round trip, atomic in the store.
 */
export interface StateStore {
  /** Which store this is, for logs and metrics. */
  readonly kind: 'memory' | 'ipc' | 'redis';
  /** Settles once the store first answers (or fails to): start waits on it, within a bound. */
  readonly ready: Promise<void>;
  /** Records `id` for `ttlMs`; false when it was recorded already and has not expired. */
  claimOnce(id: string, ttlMs: number): Promise<boolean>;
  /** One GCRA step on bucket `id`. */
  spend(id: string, bucket: Bucket): Promise<GcraVerdict>;
  close(): Promise<void>;
}

/** A store call that failed or took longer than `state.redis.timeout_ms`. */
export class StoreUnavailableError extends Error {
  constructor(reason: string) {
    super(`state store unavailable: ${reason}`);
    this.name = 'StoreUnavailableError';
  }
}
