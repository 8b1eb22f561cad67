import { createHash } from 'node:crypto';
import { GatewayError } from '../auth/errors.js';
import { type StateStore, StoreUnavailableError } from '../store/types.js';

export interface SingleUseOptions {
  readonly store: StateStore;
  readonly maxSkewS: number;
  readonly onStoreError: 'deny' | 'allow';
  readonly fallback: (action: 'deny' | 'allow') => void;
}

/**
 * `digest.single_use`: the first request to present a digest claims it (`SET NX PX` on Redis) for
 * twice the skew window, past which the timestamp check refuses it anyway. Keyed on the key name
 * and the sha256 of the digest's lowercase hex: an upper-case copy is the same digest, and the
 * store never holds a digest.
 */
export function createSingleUse(options: SingleUseOptions) {
  const ttlMs = 2 * options.maxSkewS * 1000;
  return async function claim(keyName: string, digest: string): Promise<GatewayError | null> {
    const hash = createHash('sha256').update(digest.toLowerCase()).digest('hex');
    try {
      const first = await options.store.claimOnce(`digest:${keyName}:${hash}`, ttlMs);
      return first ? null : replayed;
    } catch (err) {
      if (!(err instanceof StoreUnavailableError)) throw err;
      options.fallback(options.onStoreError);
      return options.onStoreError === 'allow' ? null : unavailable;
    }
  };
}

const replayed = new GatewayError('replayed_digest', 'this lead digest was already used');
const unavailable = new GatewayError(
  'store_unavailable',
  'single use of lead digests cannot be checked right now: retry in a second',
);
