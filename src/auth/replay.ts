/**
 * Where accepted digests are remembered when `digest.single_use` is on. The interface is small
 * so that a shared store (Redis `SET NX PX`, say) can back it when several replicas run.
 */
export interface ReplayStore {
  /** Records `id` until `expiresAtMs`; false when it was already recorded and not yet expired. */
  claim(id: string, expiresAtMs: number, nowMs: number): boolean;
  readonly size: number;
}

/**
 * In-process store. Entries are dropped once their window has passed (a digest that old is stale
 * anyway), so it never holds more than one window's worth of accepted digests.
 */
export function createMemoryReplayStore(): ReplayStore {
  const seen = new Map<string, number>();
  let nextSweepMs = 0;
  const sweep = (nowMs: number) => {
    let soonest = Number.POSITIVE_INFINITY;
    for (const [id, expiresAt] of seen) {
      if (expiresAt <= nowMs) seen.delete(id);
      else if (expiresAt < soonest) soonest = expiresAt;
    }
    nextSweepMs = soonest;
  };
  return {
    claim(id, expiresAtMs, nowMs) {
      if (nowMs >= nextSweepMs) sweep(nowMs);
      const known = seen.get(id);
      if (known !== undefined && known > nowMs) return false;
      seen.set(id, expiresAtMs);
      if (expiresAtMs < nextSweepMs) nextSweepMs = expiresAtMs;
      return true;
    },
    get size() {
      return seen.size;
    },
  };
}
