import { describe, expect, it } from 'vitest';
import type { RateLimitPolicy } from '../../src/config/types.js';
import { bucketOf } from '../../src/gcra/gcra.js';
import { policyField, rateLimitField, secondsOf } from '../../src/ratelimit/headers.js';

const policy = (name: string, limit: number, windowS: number): RateLimitPolicy => ({
  name,
  by: 'key',
  limit,
  windowS,
  burst: 0,
  keys: null,
  bucket: bucketOf(limit, windowS, 0),
});

describe('RateLimit fields (draft-ietf-httpapi-ratelimit-headers-11)', () => {
  it('lists every applying policy in RateLimit-Policy with q and w', () => {
    expect(policyField([policy('storefront', 120, 60), policy('per-key', 6000, 60)])).toBe(
      '"storefront";q=120;w=60, "per-key";q=6000;w=60',
    );
  });

  it('gives r and t per policy: t whole seconds rounded up, at least 1 when r is 0', () => {
    const p = policy('storefront', 120, 60);
    expect(rateLimitField([p], [{ remaining: 0, waitUs: 16_200_000 }])).toBe('"storefront";r=0;t=17');
    expect(rateLimitField([p], [{ remaining: 5, waitUs: 2_500_000 }])).toBe('"storefront";r=5;t=3');
    expect(secondsOf({ remaining: 0, waitUs: 1 })).toBe(1);
    expect(secondsOf({ remaining: 0, waitUs: 0 })).toBe(1);
    expect(secondsOf({ remaining: 3, waitUs: 0 })).toBe(0);
  });

  it('lists the policies with a state in order and leaves out one without (store down, allow)', () => {
    const [a, b, c] = [policy('a', 10, 1), policy('b', 20, 1), policy('c', 30, 1)];
    const states = [{ remaining: 9, waitUs: 100_000 }, null, { remaining: 0, waitUs: 1_000_001 }];
    expect(rateLimitField([a, b, c], states)).toBe('"a";r=9;t=1, "c";r=0;t=2');
    expect(rateLimitField([a, b], [null, null])).toBe('');
  });
});
