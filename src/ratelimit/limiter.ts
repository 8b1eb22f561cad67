import { createHash } from 'node:crypto';
import { GatewayError } from '../auth/errors.js';
import type { RateLimitPolicy } from '../config/types.js';
import type { MemoryStore } from '../store/memory.js';
import { type StateStore, StoreUnavailableError } from '../store/types.js';
import type { GcraVerdict } from './gcra.js';
import { type PolicyState, policyField, rateLimitField, secondsOf } from './headers.js';

/** Who a request counts for. */
export interface Subject {
  readonly keyName: string;
  /** The client address, worked out only when a `client_ip` policy applies. */
  readonly clientIp: () => string;
  /** The proven lead (token) or customer (digest), or null without a lead credential. */
  readonly lead: string | null;
}

export interface LimitOutcome {
  /** `RateLimit-Policy` and `RateLimit`, for the answer whether admitted or not. */
  readonly headers: Readonly<Record<string, string>>;
  readonly refusal: GatewayError | null;
}

export interface RateLimiterOptions {
  readonly policies: readonly RateLimitPolicy[];
  readonly store: StateStore;
  /** The per-process buckets for `on_store_error: local`; null when `store` is already local. */
  readonly local: MemoryStore | null;
  readonly onStoreError: 'local' | 'allow' | 'deny';
  readonly limited: (policy: string, key: string) => void;
  readonly fallback: (action: 'local' | 'allow' | 'deny') => void;
}

/** A policy whose store gave no answer under `on_store_error: allow`: no state to show. */
const UNKNOWN = null;

/**
 * CONTRACT §8 rate limits: every policy that applies to the request spends from its bucket (all at
 * once: one pipelined round trip on Redis); one refusal refuses the request with 429, naming the
 * policy. Returns null when no policy applies.
 */
export function createRateLimiter(options: RateLimiterOptions) {
  const byKey = new Map<string, readonly RateLimitPolicy[]>();
  const policiesOf = (keyName: string) => {
    let found = byKey.get(keyName);
    if (found === undefined) {
      found = options.policies.filter((p) => p.keys === null || p.keys.has(keyName));
      byKey.set(keyName, found);
    }
    return found;
  };

  async function spend(policy: RateLimitPolicy, subject: Subject): Promise<GcraVerdict | null> {
    const id = `rl:${policy.name}:${bucketName(policy, subject)}`;
    try {
      return await options.store.spend(id, policy.bucket);
    } catch (err) {
      if (!(err instanceof StoreUnavailableError)) throw err;
      options.fallback(options.onStoreError);
      if (options.onStoreError === 'local' && options.local !== null) {
        return options.local.spendNow(id, policy.bucket);
      }
      if (options.onStoreError === 'deny') throw err;
      return UNKNOWN;
    }
  }

  async function decide(applying: readonly RateLimitPolicy[], subject: Subject): Promise<LimitOutcome> {
    let verdicts: Array<GcraVerdict | null>;
    try {
      verdicts = await Promise.all(applying.map((p) => spend(p, subject)));
    } catch (err) {
      if (!(err instanceof StoreUnavailableError)) throw err;
      return { headers: { 'retry-after': '1' }, refusal: storeUnavailable };
    }
    const states: PolicyState[] = [];
    let refusedBy: PolicyState | null = null;
    verdicts.forEach((v, i) => {
      const policy = applying[i] as RateLimitPolicy;
      if (v === null) return;
      const state = { policy, remaining: v.remaining, waitUs: v.waitUs };
      states.push(state);
      if (!v.allowed && refusedBy === null) refusedBy = state;
    });
    const headers: Record<string, string> = { 'ratelimit-policy': policyField(applying) };
    if (states.length > 0) headers.ratelimit = rateLimitField(states);
    if (refusedBy === null) return { headers, refusal: null };
    const refused: PolicyState = refusedBy;
    options.limited(refused.policy.name, subject.keyName);
    headers['retry-after'] = String(secondsOf(refused));
    return {
      headers,
      refusal: new GatewayError('rate_limited', `rate limit "${refused.policy.name}" reached: retry later`),
    };
  }

  return {
    check(subject: Subject): Promise<LimitOutcome> | null {
      const applying = policiesOf(subject.keyName).filter((p) => p.by !== 'lead' || subject.lead !== null);
      return applying.length === 0 ? null : decide(applying, subject);
    },
  };
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;

const storeUnavailable = new GatewayError(
  'store_unavailable',
  'the rate-limit store is unavailable: retry in a second',
);

/** The bucket's name within a policy; a lead or customer id is hashed (no customer data in Redis). */
function bucketName(policy: RateLimitPolicy, subject: Subject): string {
  if (policy.by === 'key') return `key:${subject.keyName}`;
  if (policy.by === 'client_ip') return `ip:${subject.clientIp()}`;
  const lead = subject.lead ?? '';
  return `lead:${subject.keyName}:${createHash('sha256').update(lead).digest('hex').slice(0, 32)}`;
}
