import { type Bucket, type GcraVerdict, gcra } from '../gcra/gcra.js';
import { type Claim, type StateStore, stampedBefore } from './types.js';

export interface MemoryStore extends StateStore {
  /** The same calls without a promise, for the primary of a worker pool and the local fallback. */
  claimOnceNow(id: string, ttlMs: number, stampedS: number): Claim;
  spendNow(id: string, bucket: Bucket): GcraVerdict;
  readonly size: number;
  /** When this store began (ms since the epoch): it knows nothing used before. */
  readonly epochMs: number;
}

/** How often expired entries are swept (each entry also expires on its own when read). */
const SWEEP_EVERY_MS = 10_000;

/**
 * The embedded default: both maps in this process, entries dropped once expired (a claim after its
 * TTL, a bucket once it is full again), so memory follows the traffic of one window. It begins
 * empty with its process: a digest stamped before that is refused as stale (CONTRACT §9).
 */
export function createMemoryStore(nowUs: () => number = wallClockUs): MemoryStore {
  const epochMs = nowUs() / 1000;
  const claims = new Map<string, number>();
  const tats = new Map<string, number>();
  let nextSweepUs = 0;
  const sweep = (now: number) => {
    if (now < nextSweepUs) return;
    nextSweepUs = now + SWEEP_EVERY_MS * 1000;
    for (const [id, until] of claims) if (until <= now) claims.delete(id);
    for (const [id, tat] of tats) if (tat <= now) tats.delete(id);
  };
  const claimOnceNow = (id: string, ttlMs: number, stampedS: number): Claim => {
    if (stampedBefore(stampedS, epochMs)) return 'stale';
    const now = nowUs();
    sweep(now);
    const until = claims.get(id);
    if (until !== undefined && until > now) return 'replayed';
    claims.set(id, now + ttlMs * 1000);
    return 'claimed';
  };
  const spendNow = (id: string, bucket: Bucket): GcraVerdict => {
    const now = nowUs();
    sweep(now);
    const verdict = gcra(tats.get(id), now, bucket);
    if (verdict.allowed) tats.set(id, verdict.tatUs);
    return verdict;
  };
  return {
    kind: 'memory',
    ready: Promise.resolve(),
    claimOnceNow,
    spendNow,
    epochMs,
    claimOnce: async (id, ttlMs, stampedS) => claimOnceNow(id, ttlMs, stampedS),
    spend: async (id, bucket) => spendNow(id, bucket),
    async close() {
      claims.clear();
      tats.clear();
    },
    get size() {
      return claims.size + tats.size;
    },
  };
}

export function wallClockUs(): number {
  return Math.round(performance.timeOrigin * 1000 + performance.now() * 1000);
}
