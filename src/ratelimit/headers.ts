import type { RateLimitPolicy } from './settings.js';

/** One policy's standing after a request, for the `RateLimit` field (a GCRA verdict is one). */
export interface PolicyStanding {
  readonly remaining: number;
  readonly waitUs: number;
}

/** `RateLimit-Policy` (draft-ietf-httpapi-ratelimit-headers-11): every applying policy, q and w. */
export function policyField(policies: readonly RateLimitPolicy[]): string {
  return policies.map((p) => `"${p.name}";q=${p.limit};w=${p.windowS}`).join(', ');
}

/**
 * `RateLimit`: per policy `r` (admissible now) and `t` (seconds: until one more is admitted when
 * r is 0, equal to Retry-After; else until the bucket is full again). `standings[i]` is the standing of
 * `policies[i]`; a policy without one (its store was down, `on_store_error: allow`) is left out.
 */
export function rateLimitField(
  policies: readonly RateLimitPolicy[],
  standings: ReadonlyArray<PolicyStanding | null>,
): string {
  let field = '';
  for (let i = 0; i < policies.length; i++) {
    const s = standings[i];
    if (s === null || s === undefined) continue;
    const name = (policies[i] as RateLimitPolicy).name;
    field += `${field === '' ? '' : ', '}"${name}";r=${s.remaining};t=${secondsOf(s)}`;
  }
  return field;
}

/** Whole seconds for `t` and Retry-After: rounded up, and at least 1 when nothing is left. */
export function secondsOf(s: PolicyStanding): number {
  const seconds = Math.ceil(s.waitUs / 1e6);
  return s.remaining === 0 ? Math.max(1, seconds) : seconds;
}
