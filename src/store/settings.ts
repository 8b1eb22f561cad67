/**
 * Where the store's master is found: one Redis by URL, the master Sentinel names now, or the
 * masters of a Redis Cluster (each key on the master serving its slot).
 */
export type RedisTarget =
  | { readonly kind: 'url'; readonly url: string }
  | {
      readonly kind: 'sentinel';
      readonly master: string;
      readonly nodes: readonly { readonly host: string; readonly port: number }[];
    }
  | {
      readonly kind: 'cluster';
      readonly nodes: readonly { readonly host: string; readonly port: number }[];
      /** TLS to every node. */
      readonly tls: boolean;
    };

export interface RedisSettings {
  readonly target: RedisTarget;
  /** From `password` or `password_file`; undefined: none, or the one in the URL. */
  readonly password: string | undefined;
  /** Bounds every store call, reconnects included. */
  readonly timeoutMs: number;
  readonly keyPrefix: string;
}

/** `state:` resolved: Redis when set, else memory (shared by a pod's workers through the primary). */
export interface StoreSettings {
  readonly redis: RedisSettings | null;
}
