import type { LeadsConfig } from '../leads/settings.js';
import type { ListenerSettings } from '../listener/settings.js';
import type { IpMatcher } from '../net/ip.js';
import type { RateLimitsConfig } from '../ratelimit/settings.js';
import type { StoreSettings } from '../store/settings.js';
import type { TracingConfig } from '../tracing/settings.js';
import type { KeyTable } from './key-table.js';
import type { ConfigProblem } from './problems.js';

/** The fully resolved, immutable config: everything the hot path needs, already derived. */

export type { Lead, LeadsConfig } from '../leads/settings.js';
export type { RateLimitPolicy, RateLimitsConfig } from '../ratelimit/settings.js';
export type { RedisSettings, StoreSettings } from '../store/settings.js';
export { type AccessType, type ApiKey, isLive, type Purpose, type SigningSecret } from './keys.js';

export interface Config {
  /** Absolute path of the config file. */
  readonly file: string;
  /** sha256 over the config text and every file it names, to tell configs apart in metrics. */
  readonly hash: string;
  readonly loadedAt: Date;
  /** Every file whose change should reload: the config itself, the leads file, secret files. */
  readonly watchedFiles: readonly string[];
  /** The listeners, each with its TLS and PROXY protocol settings (CONTRACT §11). */
  readonly listen: ListenerSettings;
  /** The admin listener: never `proxyProtocol`. */
  readonly admin: ListenerSettings;
  /** The forward-auth listener, or null when not configured. */
  readonly forwardAuth: { readonly listen: ListenerSettings } | null;
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
  readonly state: StoreSettings;
  readonly rateLimits: RateLimitsConfig;
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
    /** Pipelined requests waiting on one connection before it is no longer read. */
    readonly maxPipelinedRequests: number;
    /** A connection held by that bound with no answer written for this long is closed. */
    readonly sendTimeoutMs: number;
    /** A request body that ends within this is received whole before the upstream is asked. */
    readonly bufferBodyBytes: number;
    /** A body must average this many bytes a second once `bodyRateGraceMs` passed (0: off). */
    readonly minBodyRateBps: number;
    readonly bodyRateGraceMs: number;
    /** Connections one listener keeps open at once (per process); more are closed on accept. */
    readonly maxConnections: number;
  };
  /** `tracing:` as written; the environment is read once at start (see tracing/settings.ts). */
  readonly tracing: TracingConfig;
  /** Which requests get a log line: all, errors (status >= 400) or none. */
  readonly log: { readonly requests: 'all' | 'errors' | 'none' };
  /** The API keys, packed; a key object is built when a request names it. */
  readonly keys: KeyTable;
  /** What `check` warns about (errors with `--strict`): placeholder or short secrets. */
  readonly warnings: readonly ConfigProblem[];
  /** How many warnings there are: `warnings` lists the first 50 and one line for the rest. */
  readonly warningCount: number;
}
