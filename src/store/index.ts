import type { Logger } from '../observability/log.js';
import type { Metrics } from '../observability/metrics.js';
import { openRedisLink } from './connect.js';
import type { EpochEvents } from './epoch.js';
import { guardStore } from './guarded.js';
import { createMemoryStore, type MemoryStore } from './memory.js';
import { createRedisStore } from './redis.js';
import type { StoreSettings } from './settings.js';
import type { StateStore } from './types.js';

export { openRedisLink } from './connect.js';
export type { RedisLink, Script } from './link.js';
export { reasonOf, script } from './link.js';
export type { RedisSettings, StoreSettings } from './settings.js';
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
  if (redis === null && deps.remote === undefined) {
    const memory = createMemoryStore();
    metrics.storeEpoch.set(memory.epochMs / 1000);
    return { store: memory, local: null };
  }
  const inner =
    redis === null
      ? (deps.remote as StateStore)
      : createRedisStore({
          link: openRedisLink(redis, (reason) =>
            logger.debug({ component: 'state', reason }, 'redis connection error'),
          ),
          keyPrefix: redis.keyPrefix,
          epoch: epochEvents(deps),
        });
  if (inner.epochMs !== undefined) metrics.storeEpoch.set(inner.epochMs / 1000);
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

/** CONTRACT §9: a store that began again is one log line and one count, at every gateway. */
function epochEvents(deps: { metrics: Metrics; logger: Logger }): EpochEvents {
  return {
    began(epochMs, previous, reason) {
      deps.metrics.storeEpoch.set(epochMs / 1000);
      const since = new Date(epochMs).toISOString();
      if (previous === null) {
        deps.logger.info(
          { component: 'state', since, reason },
          'state store epoch: digests stamped before it are refused',
        );
        return;
      }
      deps.metrics.storeRestarts.inc();
      deps.logger.warn(
        { component: 'state', since, reason },
        'state store began again: digests stamped before it are refused (stale_timestamp)',
      );
    },
  };
}

/** The primary of a worker pool answers from memory; this only bounds a primary that hangs. */
const IPC_TIMEOUT_MS = 1_000;
