import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { FixedHistogram } from './fixed-histogram.js';

/**
 * The metrics CONTRACT §7 promises, in a registry of their own (one per gateway, so tests can
 * run several). Label values are bounded: status, code from the catalogue, key names from the
 * config, fixed words. Never a path, an id or a credential.
 */
export function createMetrics(sources: {
  readonly logLinesDropped: () => number;
  /** Whether /readyz would answer 200 now (read at scrape time). */
  readonly ready: () => boolean;
}) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const buckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
  return {
    registry,
    requests: createRequestCounter(registry),
    requestDuration: new FixedHistogram(
      'leadgate_request_duration_seconds',
      'Time from request to response end, by kind: forward, lookup, preflight, auth (forward-auth answers), refused',
      'kind',
      ['forward', 'lookup', 'preflight', 'auth', 'refused'],
      buckets,
      registry,
    ),
    upstreamDuration: new FixedHistogram(
      'leadgate_upstream_duration_seconds',
      'Time from sending a request upstream (forwarded, or to the lead resolver) to its response headers',
      'kind',
      ['forward', 'lookup'],
      buckets,
      registry,
    ),
    lookups: zeroed(
      new Counter({
        name: 'leadgate_lookups_total',
        help: 'Lead lookups answered by the gateway, by result',
        labelNames: ['result'] as const,
        registers: [registry],
      }),
      'result',
      LOOKUP_RESULTS,
    ),
    leadCache: new Counter({
      name: 'leadgate_lead_cache_total',
      help: 'Upstream lead resolver cache, by result: hit or miss',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    reloads: withZeros(
      new Counter({
        name: 'leadgate_config_reloads_total',
        help: 'Config reload attempts, by result: ok, unchanged (same content) or failed',
        labelNames: ['result'] as const,
        registers: [registry],
      }),
    ),
    reloadDuration: new Histogram({
      name: 'leadgate_config_reload_duration_seconds',
      help: 'How long a config reload attempt took, from its trigger to the swap',
      labelNames: ['result'] as const,
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
      registers: [registry],
    }),
    configInfo: new Gauge({
      name: 'leadgate_config_info',
      help: 'The config in force: 1 for its hash',
      labelNames: ['hash'] as const,
      // in a worker pool: one value, not one per worker added up
      aggregator: 'first',
      registers: [registry],
    }),
    keyExpiry: new Gauge({
      name: 'leadgate_key_expiry_timestamp_seconds',
      help: 'When each API key with expires_at expires (unix seconds): alert on it before it does',
      labelNames: ['key'] as const,
      aggregator: 'first',
      registers: [registry],
    }),
    configLoaded: new Gauge({
      name: 'leadgate_config_loaded_timestamp_seconds',
      help: 'When the config in force was loaded',
      aggregator: 'min',
      registers: [registry],
    }),
    inflight: createInflight(registry),
    ready: new Gauge({
      name: 'leadgate_ready',
      help: 'Whether /readyz answers 200 (1) or 503 (0: draining, or the upstream health check failing)',
      aggregator: 'min',
      registers: [registry],
      collect() {
        this.set(sources.ready() ? 1 : 0);
      },
    }),
    rateLimited: new Counter({
      name: 'leadgate_rate_limited_total',
      help: 'Requests refused with 429 rate_limited, by the policy that refused and the key name',
      labelNames: ['policy', 'key'] as const,
      registers: [registry],
    }),
    storeErrors: zeroed(
      new Counter({
        name: 'leadgate_state_store_errors_total',
        help: 'Shared-state store calls that failed or took longer than state.redis.timeout_ms, by op',
        labelNames: ['op'] as const,
        registers: [registry],
      }),
      'op',
      ['claim', 'spend'],
    ),
    storeDuration: new FixedHistogram(
      'leadgate_state_store_duration_seconds',
      'Shared-state store calls (single-use claims, rate-limit buckets), by op',
      'op',
      ['claim', 'spend'],
      [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25],
      registry,
    ),
    storeUp: new Gauge({
      name: 'leadgate_state_store_up',
      help: 'Whether the shared-state store answers: 1, or 0 while it is paused after repeated failures',
      aggregator: 'min',
      registers: [registry],
    }),
    storeRestarts: new Counter({
      name: 'leadgate_state_store_restarts_total',
      help: 'Times this gateway saw its state store begin again (a Redis restart, failover or flush): digests stamped before are refused',
      registers: [registry],
    }),
    storeEpoch: new Gauge({
      name: 'leadgate_state_store_epoch_seconds',
      help: 'When the state store began, as this gateway knows it: digests stamped before are refused (stale_timestamp)',
      aggregator: 'max',
      registers: [registry],
    }),
    storeFallbacks: new Counter({
      name: 'leadgate_state_store_fallbacks_total',
      help: 'Requests decided without the store, by use (digest, rate_limit) and on_store_error action',
      labelNames: ['use', 'action'] as const,
      registers: [registry],
    }),
    connectionBounds: zeroed(
      new Counter({
        name: 'leadgate_connection_bounds_total',
        help: 'Times a client connection met a bound of limits:, by bound: pipeline (reading held), send_timeout (held and its answers unread: closed; a forwarded answer not taken: cut with its upstream request; an h2 stream with no frame: cancelled), body_rate (body too slow: 408, connection cut), handshake_timeout (no TLS handshake within header_timeout_ms), max_connections (accepted past the cap: closed), h2_flood (h2 session ended for a flood of resets, invalid frames or refused streams), h2_goaway (h2 session destroyed: its streams did not finish within the grace after GOAWAY)',
        labelNames: ['bound'] as const,
        registers: [registry],
      }),
      'bound',
      CONNECTION_BOUNDS,
    ),
    logDropped: new Counter({
      name: 'leadgate_log_lines_dropped_total',
      help: 'Log lines dropped because stdout was not read fast enough (the queue holds 16 MiB)',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(sources.logLinesDropped());
      },
    }),
  };
}

/** The bounds of `limits:` that act on a client connection (docs/reference/limits.md). */
export const CONNECTION_BOUNDS = [
  'pipeline',
  'send_timeout',
  'body_rate',
  'handshake_timeout',
  'max_connections',
  'h2_flood',
  'h2_goaway',
] as const;

/** What a lookup can come to (http/server.ts counts each). */
export const LOOKUP_RESULTS = ['found', 'not_found', 'refused', 'error'] as const;

/**
 * CONTRACT §9: every `{policy, key}` a config's rate limits can count, at 0 from the first scrape
 * (a policy without `keys` applies to every key). Called with each loaded config; a series once
 * shown stays (a counter does not go away on a reload).
 */
export function zeroRateLimited(
  counter: Counter<'policy' | 'key'>,
  policies: readonly { readonly name: string; readonly keys: ReadonlySet<string> | null }[],
  keyNames: readonly string[],
): void {
  for (const policy of policies) {
    for (const key of policy.keys ?? keyNames) counter.inc({ policy: policy.name, key }, 0);
  }
}

/** Every reload result present from the start, at 0, so rate() and alerts see the series. */
function withZeros(counter: Counter<'result'>): Counter<'result'> {
  return zeroed(counter, 'result', ['ok', 'unchanged', 'failed']);
}

function zeroed<L extends string>(counter: Counter<L>, label: L, values: readonly string[]): Counter<L> {
  for (const value of values) counter.inc({ [label]: value } as Partial<Record<L, string>>, 0);
  return counter;
}

export type Metrics = ReturnType<typeof createMetrics>;

/**
 * `leadgate_requests_total{status, code, key}`, counted on the hot path in nested maps (three
 * lookups, no label object, no hashing) and handed to prom-client only when /metrics is read.
 */
function createRequestCounter(registry: Registry) {
  const totals = new Map<string, Map<string, Map<number, number>>>();
  new Counter({
    name: 'leadgate_requests_total',
    help: 'Requests answered, by status, outcome code (ok for forwarded and answered) and key name',
    labelNames: ['status', 'code', 'key'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [key, byCode] of totals)
        for (const [code, byStatus] of byCode)
          for (const [status, n] of byStatus) this.inc({ status: String(status), code, key }, n);
    },
  });
  return {
    /** One answered request; `key` is the key name, '' before one is known. */
    add(status: number, code: string, key: string): void {
      const byStatus = getOrAdd(
        getOrAdd(totals, key, newMap<string, Map<number, number>>),
        code,
        newMap<number, number>,
      );
      byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
    },
  };
}

/** `leadgate_inflight_requests`: a plain number on the hot path, read when /metrics is. */
function createInflight(registry: Registry) {
  const inflight = { count: 0 };
  new Gauge({
    name: 'leadgate_inflight_requests',
    help: 'Requests being served now',
    registers: [registry],
    collect() {
      this.set(inflight.count);
    },
  });
  return inflight;
}

function getOrAdd<K, V>(map: Map<K, V>, k: K, make: () => V): V {
  let v = map.get(k);
  if (v === undefined) {
    v = make();
    map.set(k, v);
  }
  return v;
}

const newMap = <K, V>() => new Map<K, V>();
