import type { KeyObject } from 'node:crypto';
import type { IpMatcher } from '../net/ip.js';
import type { Bucket } from '../ratelimit/gcra.js';
import type { RedisSettings } from '../store/settings.js';
import type { TracingConfig } from '../tracing/settings.js';
import type { KeyTable } from './key-table.js';
import type { ConfigProblem } from './problems.js';

export type { RedisSettings };

/** The fully resolved, immutable config: everything the hot path needs, already derived. */

export type AccessType = 'READ' | 'WRITE';
export type Purpose = 'SERVER' | 'STOREFRONT';

export interface ApiKey {
  readonly name: string;
  /** Lowercase hex of sha256(key): the only form of the key leadgate keeps. */
  readonly sha256: string;
  readonly access: AccessType;
  readonly purpose: Purpose | null;
  /** The secret that mints, as a KeyObject made once (HMAC and HS256 both take it). */
  readonly secret: KeyObject;
  /** Its kid, put in the header of minted tokens (keys with `signing_secrets`), or null. */
  readonly kid: string | null;
  /**
   * Every secret that verifies, the minting one first. With `signing_secret`: that one, kid null.
   * With `signing_secrets`: each entry, dead from its `verify_until` on.
   */
  readonly verifiers: readonly SigningSecret[];
  readonly origins: IpMatcher | null;
  readonly corsOrigins: ReadonlySet<string> | null;
  /** True for READ + STOREFRONT: a lead credential is needed on every endpoint. */
  readonly needsLead: boolean;
  /** Unix seconds from which the key is refused (`expires_at`), or null. */
  readonly expiresAtS: number | null;
}

export interface SigningSecret {
  readonly kid: string | null;
  readonly key: KeyObject;
  /** Unix seconds from which this secret verifies nothing, or null. */
  readonly verifyUntilS: number | null;
}

/** True while `secret` verifies. */
export function isLive(secret: SigningSecret, nowS: number): boolean {
  return secret.verifyUntilS === null || nowS < secret.verifyUntilS;
}

export interface Lead {
  readonly _id: string;
  readonly customer_id: string;
  readonly [field: string]: unknown;
}

export type LeadsConfig =
  | { readonly kind: 'file'; readonly file: string | null; readonly records: readonly Lead[] }
  | {
      readonly kind: 'upstream';
      readonly path: string;
      readonly byIdPath: string | null;
      readonly cacheTtlMs: number;
      readonly cacheSize: number;
    };

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

export interface Config {
  /** Absolute path of the config file. */
  readonly file: string;
  /** sha256 over the config text and every file it names, to tell configs apart in metrics. */
  readonly hash: string;
  readonly loadedAt: Date;
  /** Every file whose change should reload: the config itself, the leads file, secret files. */
  readonly watchedFiles: readonly string[];
  readonly listen: { readonly host: string; readonly port: number };
  readonly admin: { readonly host: string; readonly port: number };
  /** The forward-auth listener, or null when not configured. */
  readonly forwardAuth: { readonly listen: { readonly host: string; readonly port: number } } | null;
  readonly upstream: {
    readonly url: URL;
    readonly timeoutMs: number;
    readonly connectTimeoutMs: number;
    readonly maxSockets: number;
    readonly healthPath: string | null;
    /** The forwarding engine; chosen at start (a reload that changes it warns). */
    readonly engine: 'undici' | 'http-proxy';
    /** Client headers whose name holds `_`: dropped (default, as nginx) or passed (reserved names never). */
    readonly underscoreHeaders: 'drop' | 'pass';
  };
  readonly trustedProxies: IpMatcher;
  readonly digest: {
    readonly maxSkewS: number;
    readonly singleUse: boolean;
    /** The store cannot say whether a digest was used: refuse (503) or accept (logged, counted). */
    readonly onStoreError: 'deny' | 'allow';
  };
  /** Processes serving the API; `auto` is worked out at start (workers/cpu-quota.ts). */
  readonly workers: number | 'auto';
  /** Shared state: Redis when set, else memory (shared by a pod's workers through the primary). */
  readonly state: { readonly redis: RedisSettings | null };
  readonly rateLimits: {
    readonly onStoreError: 'local' | 'allow' | 'deny';
    readonly policies: readonly RateLimitPolicy[];
  };
  readonly leadToken: { readonly ttlS: number; readonly maxSkewS: number; readonly cacheSize: number };
  readonly leads: LeadsConfig;
  readonly cors: { readonly origins: ReadonlySet<string>; readonly maxAgeS: number };
  readonly shutdown: { readonly delayS: number; readonly timeoutS: number };
  readonly limits: {
    readonly maxHeaderBytes: number;
    /** More headers than this: 431 (Node would otherwise drop the ones past 2,000 silently). */
    readonly maxHeaderCount: number;
    readonly maxBodyBytes: number | null;
    readonly headerTimeoutMs: number;
    readonly requestTimeoutMs: number;
    readonly keepAliveTimeoutMs: number;
  };
  /** `tracing:` as written; the environment is read once at start (see tracing/settings.ts). */
  readonly tracing: TracingConfig;
  /** Which requests get a log line: all, errors (status >= 400) or none. */
  readonly log: { readonly requests: 'all' | 'errors' | 'none' };
  /** The API keys, packed; a key object is built when a request names it. */
  readonly keys: KeyTable;
  /** What `check` warns about (errors with `--strict`): placeholder or short secrets. */
  readonly warnings: readonly ConfigProblem[];
}
