export interface RedisSettings {
  readonly url: string;
  /** Bounds every store call, reconnects included. */
  readonly timeoutMs: number;
  readonly keyPrefix: string;
}

/** `state:` resolved: Redis when set, else memory (shared by a pod's workers through the primary). */
export interface StoreSettings {
  readonly redis: RedisSettings | null;
}
