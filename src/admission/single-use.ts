import { createHash } from 'node:crypto';
import { GatewayError } from '../contract/errors.js';
import type { MemoryStore } from '../store/memory.js';
import { type Claim, type StateStore, StoreUnavailableError } from '../store/types.js';

export interface SingleUseOptions {
  /** The shared store; an in-process one (memory) is asked without a promise. */
  readonly store: StateStore | MemoryStore;
  readonly maxSkewS: number;
  readonly onStoreError: 'deny' | 'allow';
  readonly fallback: (action: 'deny' | 'allow') => void;
}

/**
 * `digest.single_use`: the first request to present a digest claims it (`SET NX PX` on Redis) for
 * twice the skew window, past which the timestamp check refuses it anyway. Keyed on the key name
 * and the sha256 of the digest's lowercase hex: an upper-case copy is the same digest, and the
 * store never holds a digest. A digest stamped before the store began (a Redis that restarted or
 * failed over, a fresh process) is refused as `stale_timestamp`: the store cannot say whether it
 * was used (CONTRACT §9).
 */
export function createSingleUse(options: SingleUseOptions) {
  const ttlMs = 2 * options.maxSkewS * 1000;
  const inProcess = 'claimOnceNow' in options.store ? options.store : null;

  async function claimShared(id: string, stampedS: number): Promise<GatewayError | null> {
    try {
      return refusal(await options.store.claimOnce(id, ttlMs, stampedS));
    } catch (err) {
      if (!(err instanceof StoreUnavailableError)) throw err;
      options.fallback(options.onStoreError);
      return options.onStoreError === 'allow' ? null : unavailable;
    }
  }

  return function claim(
    keyName: string,
    digest: string,
    stampedS: number,
  ): GatewayError | null | Promise<GatewayError | null> {
    const hash = createHash('sha256').update(digest.toLowerCase()).digest('hex');
    const id = `digest:${keyName}:${hash}`;
    if (inProcess !== null) return refusal(inProcess.claimOnceNow(id, ttlMs, stampedS));
    return claimShared(id, stampedS);
  };
}

function refusal(claim: Claim): GatewayError | null {
  return claim === 'claimed' ? null : claim === 'replayed' ? replayed : stale;
}

const replayed = new GatewayError('replayed_digest', 'this lead digest was already used');
const stale = new GatewayError(
  'stale_timestamp',
  'the gateway cannot vouch for a digest stamped before its state store began: make a new one',
);
const unavailable = new GatewayError(
  'store_unavailable',
  'single use of lead digests cannot be checked right now: retry in a second',
);
