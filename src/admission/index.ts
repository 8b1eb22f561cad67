import type { RequestFacts } from '../auth/facts.js';
import type { Principal } from '../auth/pipeline.js';
import type { Config } from '../config/types.js';
import type { GatewayError } from '../contract/errors.js';
import { addressKey } from '../net/ip.js';
import { createRateLimiter, type Subject } from '../ratelimit/limiter.js';
import type { MemoryStore } from '../store/memory.js';
import type { StateStore } from '../store/types.js';
import { createSingleUse } from './single-use.js';

/** The verdict: headers for the answer either way (RateLimit fields, Retry-After), and a refusal. */
export interface Admitted {
  readonly headers: Readonly<Record<string, string>>;
  readonly error: GatewayError | null;
}

/**
 * Null: nothing to check for this request (no single use, no policy). With the store in this
 * process the verdict comes without a promise; a shared store (Redis, a pool's primary) answers
 * with one. The request's client address (`facts`, worked out once per request) is read only when
 * a `client_ip` policy asks for it.
 */
export type Admit = (principal: Principal, facts: RequestFacts) => Admitted | Promise<Admitted> | null;

export interface AdmissionDeps {
  /** Shared state: Redis (guarded), the primary's memory over IPC, or this process's memory. */
  readonly store: StateStore;
  /** Per-process buckets for `rate_limits.on_store_error: local`; null when `store` is local. */
  readonly local: MemoryStore | null;
  readonly limited: (policy: string, key: string) => void;
  readonly fallback: (use: 'digest' | 'rate_limit', action: string) => void;
}

/**
 * The step after §3 (CONTRACT §8): a digest's single use, then the rate limits. Requests refused
 * by §3 never get here, so they neither use a digest up nor count. Null when the config has
 * neither: the request goes on at once.
 */
export function createAdmission(config: Config, deps: AdmissionDeps): Admit | null {
  const singleUse = config.digest.singleUse
    ? createSingleUse({
        store: deps.store,
        maxSkewS: config.digest.maxSkewS,
        onStoreError: config.digest.onStoreError,
        fallback: (action) => deps.fallback('digest', action),
      })
    : null;
  const limiter =
    config.rateLimits.policies.length === 0
      ? null
      : createRateLimiter({
          policies: config.rateLimits.policies,
          store: deps.store,
          local: deps.local,
          onStoreError: config.rateLimits.onStoreError,
          limited: deps.limited,
          fallback: (action) => deps.fallback('rate_limit', action),
        });
  if (singleUse === null && limiter === null) return null;
  // The limiter's outcome is an `Admitted` as it is: nothing is mapped per request.
  const limit: Admit = (principal, facts) =>
    limiter === null ? null : limiter.check(new RequestSubject(principal, facts));

  return (principal, facts) => {
    const lead = principal.lead;
    if (singleUse === null || lead?.via !== 'digest') return limit(principal, facts);
    return after(singleUse(principal.key.name, lead.digest, lead.stampedS), (error) => {
      if (error !== null) return { headers: error.code === 'store_unavailable' ? RETRY : NONE, error };
      return limit(principal, facts) ?? ADMITTED;
    });
  };
}

/** One request as the rate limiter sees it: methods on a prototype, nothing worked out in advance. */
class RequestSubject implements Subject {
  readonly keyName: string;
  readonly hasLead: boolean;

  constructor(
    private readonly principal: Principal,
    private readonly facts: RequestFacts,
  ) {
    this.keyName = principal.key.name;
    this.hasLead = principal.lead !== null;
  }

  clientIp(): string {
    const address = this.facts.clientAddress();
    return address === null ? 'unknown' : addressKey(address);
  }

  lead(): string {
    const lead = this.principal.lead;
    if (lead === null) return '';
    return lead.via === 'digest' ? `customer:${lead.customerId}` : `lead:${lead.leadId}`;
  }
}

/** `f` on a value that may still be coming: at once when it is here, else when it comes. */
function after<T, U>(value: T | Promise<T>, f: (v: T) => U | Promise<U>): U | Promise<U> {
  return value instanceof Promise ? value.then(f) : f(value);
}

/** The headers of an admission that adds none (compared by identity on the hot path). */
export const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});
const NONE = NO_HEADERS;
const RETRY: Readonly<Record<string, string>> = Object.freeze({ 'retry-after': '1' });
const ADMITTED: Admitted = Object.freeze({ headers: NONE, error: null });
