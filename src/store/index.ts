import type { Logger } from '../observability/log.js';
import type { Metrics } from '../observability/metrics.js';
import { guardStore } from './guarded.js';
import { createMemoryStore, type MemoryStore } from './memory.js';
import { createRedisStore } from './redis.js';
import type { StoreSettings } from './settings.js';
import type { StateStore } from './types.js';

export type { StateStore } from './types.js';

export interface OpenedStore {
  readonly store: StateStore;
  /** Per-process buckets for `rate_limits.on_store_error: local`, when `store` is not local. */
  readonly local: MemoryStore | null;
}

/**
 * The state store a gateway process uses, chosen once at start (a reload that changes
 * `state.redis` warns that it needs a restart): Redis, guarded by `timeout_ms` and the circuit
 * breaker; else `remote` (the primary's memory over IPC, in a worker pool); else memory.
 */
export function openStateStore(
  config: { readonly state: StoreSettings },
  deps: { metrics: Metrics; logger: Logger; remote?: StateStore },
): OpenedStore {
  const { metrics, logger } = deps;
  const redis = config.state.redis;
  metrics.storeUp.set(1);
  if (redis === null && deps.remote === undefined) return { store: createMemoryStore(), local: null };
  const inner =
    redis === null
      ? (deps.remote as StateStore)
      : createRedisStore({
          url: redis.url,
          keyPrefix: redis.keyPrefix,
          connectTimeoutMs: Math.max(redis.timeoutMs, 1_000),
          onError: (reason) => logger.debug({ component: 'state', reason }, 'redis connection error'),
        });
  const timeoutMs = redis?.timeoutMs ?? IPC_TIMEOUT_MS;
  const store = guardStore(inner, timeoutMs, {
    call(op, seconds, ok) {
      metrics.storeDuration.observe(op, seconds);
      if (!ok) metrics.storeErrors.inc({ op });
    },
    down(reason) {
      metrics.storeUp.set(0);
      logger.error(
        { component: 'state', store: inner.kind, reason },
        'state store down: single use and rate limits follow on_store_error until it answers',
      );
    },
    up() {
      metrics.storeUp.set(1);
      logger.info({ component: 'state', store: inner.kind }, 'state store answers again');
    },
  });
  return { store, local: createMemoryStore() };
}

/** The primary of a worker pool answers from memory; this only bounds a primary that hangs. */
const IPC_TIMEOUT_MS = 1_000;
