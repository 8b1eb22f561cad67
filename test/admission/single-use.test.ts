import { describe, expect, it } from 'vitest';
import { createSingleUse } from '../../src/admission/single-use.js';
import { createMemoryStore } from '../../src/store/memory.js';
import { type Claim, type StateStore, StoreUnavailableError } from '../../src/store/types.js';

const DIGEST = 'ab'.repeat(32);
const NOW_S = Math.ceil(Date.now() / 1000) + 1;

/** A shared store (asked with a promise, as Redis is) that answers claims with `claim`. */
const sharedStore = (claim: (id: string) => Promise<Claim>): StateStore => ({
  kind: 'redis',
  ready: Promise.resolve(),
  claimOnce: claim,
  spend: () => Promise.reject(new Error('not used')),
  close: async () => {},
});

describe('single use of digests', () => {
  it('accepts a digest once per key, upper case being the same digest', async () => {
    const claim = createSingleUse({
      store: createMemoryStore(),
      maxSkewS: 300,
      onStoreError: 'deny',
      fallback: () => {},
    });
    expect(await claim('web', DIGEST, NOW_S)).toBeNull();
    expect((await claim('web', DIGEST, NOW_S))?.code).toBe('replayed_digest');
    expect((await claim('web', DIGEST.toUpperCase(), NOW_S))?.code).toBe('replayed_digest');
    expect(await claim('other-key', DIGEST, NOW_S)).toBeNull();
  });

  it('refuses as stale a digest stamped before the store began, and accepts one stamped after', async () => {
    const store = createMemoryStore();
    const claim = createSingleUse({ store, maxSkewS: 300, onStoreError: 'deny', fallback: () => {} });
    const beganS = store.epochMs / 1000;
    expect((await claim('web', DIGEST, Math.floor(beganS) - 1))?.code).toBe('stale_timestamp');
    expect(await claim('web', DIGEST, Math.ceil(beganS))).toBeNull();
  });

  it('stores no digest: the id holds the key name and a hash', async () => {
    const ids: string[] = [];
    const recording = sharedStore(async (id) => {
      ids.push(id);
      return 'claimed';
    });
    const claim = createSingleUse({
      store: recording,
      maxSkewS: 300,
      onStoreError: 'deny',
      fallback: () => {},
    });
    await claim('web', DIGEST, NOW_S);
    expect(ids[0]).toMatch(/^digest:web:[0-9a-f]{64}$/);
    expect(ids[0]).not.toContain(DIGEST);
  });

  it('follows on_store_error when the store cannot answer: deny is 503, allow accepts', async () => {
    const broken = sharedStore(() => Promise.reject(new StoreUnavailableError('down')));
    const actions: string[] = [];
    const fallback = (a: string) => actions.push(a);
    const deny = createSingleUse({ store: broken, maxSkewS: 300, onStoreError: 'deny', fallback });
    const allow = createSingleUse({ store: broken, maxSkewS: 300, onStoreError: 'allow', fallback });
    expect((await deny('web', DIGEST, NOW_S))?.code).toBe('store_unavailable');
    expect(await allow('web', DIGEST, NOW_S)).toBeNull();
    expect(actions).toEqual(['deny', 'allow']);
  });
});
