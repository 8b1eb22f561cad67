import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/**
 * The metrics CONTRACT §7 promises, in a registry of their own (one per gateway, so tests can
 * run several). Label values are bounded: status, code from the catalogue, key names from the
 * config, fixed words. Never a path, an id or a credential.
 */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const buckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
  return {
    registry,
    requests: new Counter({
      name: 'leadgate_requests_total',
      help: 'Requests answered, by status, outcome code (ok for forwarded and answered) and key name',
      labelNames: ['status', 'code', 'key'] as const,
      registers: [registry],
    }),
    requestDuration: new Histogram({
      name: 'leadgate_request_duration_seconds',
      help: 'Time from request to response end, by kind: forward, lookup, preflight, refused',
      labelNames: ['kind'] as const,
      buckets,
      registers: [registry],
    }),
    upstreamDuration: new Histogram({
      name: 'leadgate_upstream_duration_seconds',
      help: 'Time from sending a request upstream to its response headers',
      labelNames: ['kind'] as const,
      buckets,
      registers: [registry],
    }),
    lookups: new Counter({
      name: 'leadgate_lookups_total',
      help: 'Lead lookups answered by the gateway, by result',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
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
      registers: [registry],
    }),
    configLoaded: new Gauge({
      name: 'leadgate_config_loaded_timestamp_seconds',
      help: 'When the config in force was loaded',
      registers: [registry],
    }),
    inflight: new Gauge({
      name: 'leadgate_inflight_requests',
      help: 'Requests being served now',
      registers: [registry],
    }),
  };
}

/** Every reload result present from the start, at 0, so rate() and alerts see the series. */
function withZeros(counter: Counter<'result'>): Counter<'result'> {
  for (const result of ['ok', 'unchanged', 'failed']) counter.inc({ result }, 0);
  return counter;
}

export type Metrics = ReturnType<typeof createMetrics>;
