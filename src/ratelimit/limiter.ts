import { createHash } from 'node:crypto';
import { GatewayError } from '../contract/errors.js';
import type { GcraVerdict } from '../gcra/gcra.js';
import type { MemoryStore } from '../store/memory.js';
import { type StateStore, StoreUnavailableError } from '../store/types.js';
import { type PolicyState, policyField, rateLimitField, secondsOf } from './headers.js';
import type { RateLimitPolicy } from './settings.js';

/** Who a request counts for. The address and the lead are worked out only when a policy asks. */
export interface Subject {
  readonly keyName: string;
  /** A lead credential was proven (token or digest): `lead` policies apply. */
  readonly hasLead: boolean;
  /** The client address, for `client_ip` policies. */
  clientIp(): string;
  /** The proven lead (token) or customer (digest), for `lead` policies. */
  lead(): string;
}

export interface LimitOutcome {
  /** `RateLimit-Policy` and `RateLimit`, for the answer whether admitted or not. */
  readonly headers: Readonly<Record<string, string>>;
  readonly refusal: GatewayError | null;
}

export interface RateLimiterOptions {
  readonly policies: readonly RateLimitPolicy[];
  /** The shared store; an in-process one (memory) is asked without a promise. */
  readonly store: StateStore | MemoryStore;
  /** The per-process buckets for `on_store_error: local`; null when `store` is already local. */
  readonly local: MemoryStore | null;
  readonly onStoreError: 'local' | 'allow' | 'deny';
  readonly limited: (policy: string, key: string) => void;
  readonly fallback: (action: 'local' | 'allow' | 'deny') => void;
}

/** The policies that apply to one key, with and without a lead credential; fields built once. */
interface Applying {
  readonly policies: readonly RateLimitPolicy[];
  readonly policyField: string;
  /** Each policy's bucket id when the key alone names it (`by: key`), else null: built per request. */
  readonly keyIds: ReadonlyArray<string | null>;
}

/**
 * CONTRACT §8 rate limits: every policy that applies to the request spends from its bucket (all at
 * once: one pipelined round trip on Redis, no promise at all in memory); one refusal refuses the
 * request with 429, naming the policy. `check` returns null when no policy applies.
 */
export function createRateLimiter(options: RateLimiterOptions) {
  const inProcess = 'spendNow' in options.store ? options.store : null;
  const byKey = new Map<string, { withLead: Applying | null; withoutLead: Applying | null }>();
  const applyingTo = (keyName: string, hasLead: boolean): Applying | null => {
    let sets = byKey.get(keyName);
    if (sets === undefined) {
      const forKey = options.policies.filter((p) => p.keys === null || p.keys.has(keyName));
      sets = {
        withLead: applying(forKey, keyName),
        withoutLead: applying(
          forKey.filter((p) => p.by !== 'lead'),
          keyName,
        ),
      };
      byKey.set(keyName, sets);
    }
    return hasLead ? sets.withLead : sets.withoutLead;
  };

  async function spendShared(policy: RateLimitPolicy, id: string): Promise<GcraVerdict | null> {
    try {
      return await options.store.spend(id, policy.bucket);
    } catch (err) {
      if (!(err instanceof StoreUnavailableError)) throw err;
      options.fallback(options.onStoreError);
      if (options.onStoreError === 'local' && options.local !== null) {
        return options.local.spendNow(id, policy.bucket);
      }
      if (options.onStoreError === 'deny') throw err;
      return null; // allow: admitted, with no state to show for this policy
    }
  }

  async function decideShared(set: Applying, subject: Subject): Promise<LimitOutcome> {
    try {
      const ids = set.policies.map((p, i) => set.keyIds[i] ?? bucketId(p, subject));
      const verdicts = await Promise.all(set.policies.map((p, i) => spendShared(p, ids[i] as string)));
      return outcome(set, verdicts, subject.keyName);
    } catch (err) {
      if (!(err instanceof StoreUnavailableError)) throw err;
      return { headers: RETRY, refusal: storeUnavailable };
    }
  }

  function outcome(
    set: Applying,
    verdicts: ReadonlyArray<GcraVerdict | null>,
    keyName: string,
  ): LimitOutcome {
    const states: PolicyState[] = [];
    let refusedBy: PolicyState | null = null;
    for (let i = 0; i < verdicts.length; i++) {
      const v = verdicts[i];
      if (v === null || v === undefined) continue;
      const state = { policy: set.policies[i] as RateLimitPolicy, remaining: v.remaining, waitUs: v.waitUs };
      states.push(state);
      if (!v.allowed && refusedBy === null) refusedBy = state;
    }
    const headers: Record<string, string> = { 'ratelimit-policy': set.policyField };
    if (states.length > 0) headers.ratelimit = rateLimitField(states);
    if (refusedBy === null) return { headers, refusal: null };
    options.limited(refusedBy.policy.name, keyName);
    headers['retry-after'] = String(secondsOf(refusedBy));
    return {
      headers,
      refusal: new GatewayError('rate_limited', `rate limit "${refusedBy.policy.name}" reached: retry later`),
    };
  }

  return {
    check(subject: Subject): LimitOutcome | Promise<LimitOutcome> | null {
      const set = applyingTo(subject.keyName, subject.hasLead);
      if (set === null) return null;
      if (inProcess === null) return decideShared(set, subject);
      const verdicts: GcraVerdict[] = [];
      for (let i = 0; i < set.policies.length; i++) {
        const p = set.policies[i] as RateLimitPolicy;
        verdicts.push(inProcess.spendNow(set.keyIds[i] ?? bucketId(p, subject), p.bucket));
      }
      return outcome(set, verdicts, subject.keyName);
    },
  };
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;

function applying(policies: readonly RateLimitPolicy[], keyName: string): Applying | null {
  if (policies.length === 0) return null;
  const keyIds = policies.map((p) => (p.by === 'key' ? keyBucketId(p, keyName) : null));
  return { policies, policyField: policyField(policies), keyIds };
}

const RETRY: Readonly<Record<string, string>> = Object.freeze({ 'retry-after': '1' });
const storeUnavailable = new GatewayError(
  'store_unavailable',
  'the rate-limit store is unavailable: retry in a second',
);

/** The bucket's id; a lead or customer id is hashed (no customer data in the store's keys). */
function bucketId(policy: RateLimitPolicy, subject: Subject): string {
  if (policy.by === 'key') return keyBucketId(policy, subject.keyName);
  if (policy.by === 'client_ip') return `rl:${policy.name}:ip:${subject.clientIp()}`;
  const lead = createHash('sha256').update(subject.lead()).digest('hex').slice(0, 32);
  return `rl:${policy.name}:lead:${subject.keyName}:${lead}`;
}

function keyBucketId(policy: RateLimitPolicy, keyName: string): string {
  return `rl:${policy.name}:key:${keyName}`;
}
