import type { Bucket } from '../gcra/gcra.js';

/** A rate-limit policy, resolved: its GCRA bucket shape computed once. */
export interface RateLimitPolicy {
  readonly name: string;
  readonly by: 'key' | 'client_ip' | 'lead';
  readonly limit: number;
  readonly windowS: number;
  readonly burst: number;
  /** The keys it applies to, or null for every key. */
  readonly keys: ReadonlySet<string> | null;
  readonly bucket: Bucket;
}

/** `rate_limits:` resolved. */
export interface RateLimitsConfig {
  readonly onStoreError: 'local' | 'allow' | 'deny';
  readonly policies: readonly RateLimitPolicy[];
}
