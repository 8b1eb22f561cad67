import { createHash } from 'node:crypto';
import { GatewayError } from '../contract/errors.js';
import type { GcraVerdict } from '../gcra/gcra.js';
import type { MemoryStore } from '../store/memory.js';
import { type StateStore, StoreUnavailableError } from '../store/types.js';
import { policyField, rateLimitField, secondsOf } from './headers.js';
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

/** The verdict, in the shape admission answers with (nothing to map per request). */
export interface LimitOutcome {
  /** `RateLimit-Policy` and `RateLimit`, for the answer whether admitted or not. */
  readonly headers: Readonly<Record<string, string>>;
  readonly error: GatewayError | null;
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
  /** The headers when no policy has a standing to show (each store down, `allow`). */
  readonly policyOnly: Readonly<Record<string, string>>;
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
      return null; // allow: admitted, with no standing to show for this policy
    }
  }

  async function decideShared(set: Applying, subject: Subject): Promise<LimitOutcome> {
    try {
      const ids = set.policies.map((p, i) => set.keyIds[i] ?? bucketId(p, subject));
      const verdicts = await Promise.all(set.policies.map((p, i) => spendShared(p, ids[i] as string)));
      return outcome(set, verdicts, subject.keyName);
    } catch (err) {
      if (!(err instanceof StoreUnavailableError)) throw err;
      return { headers: RETRY, error: storeUnavailable };
    }
  }

  /** `verdicts[i]` is `policies[i]`'s (null: its store was down and `allow` let it through). */
  function outcome(
    set: Applying,
    verdicts: ReadonlyArray<GcraVerdict | null>,
    keyName: string,
  ): LimitOutcome {
    const field = rateLimitField(set.policies, verdicts);
    const refused = firstRefused(verdicts);
    if (refused === -1) {
      const headers =
        field === '' ? set.policyOnly : { 'ratelimit-policy': set.policyField, ratelimit: field };
      return { headers, error: null };
    }
    const policy = set.policies[refused] as RateLimitPolicy;
    options.limited(policy.name, keyName);
    const headers = {
      'ratelimit-policy': set.policyField,
      ratelimit: field,
      'retry-after': String(secondsOf(verdicts[refused] as GcraVerdict)),
    };
    return {
      headers,
      error: new GatewayError('rate_limited', `rate limit "${policy.name}" reached: retry later`),
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
  const field = policyField(policies);
  return { policies, policyField: field, policyOnly: Object.freeze({ 'ratelimit-policy': field }), keyIds };
}

/** The index of the first refusing verdict, or -1. */
function firstRefused(verdicts: ReadonlyArray<GcraVerdict | null>): number {
  for (let i = 0; i < verdicts.length; i++) if (verdicts[i]?.allowed === false) return i;
  return -1;
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
