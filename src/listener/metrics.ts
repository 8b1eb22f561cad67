import { Counter, Gauge, type Registry } from 'prom-client';
import type { ListenerName } from './settings.js';

export type ProxyResult = 'ok' | 'local' | 'refused' | 'malformed' | 'timeout';

/** CONTRACT §11's listener metrics, every label the config knows at 0 from the first scrape. */
export interface ListenerMetrics {
  readonly connections: Counter<'listener' | 'protocol' | 'tls'>;
  readonly proxyProtocol: Counter<'listener' | 'result'>;
  readonly tlsReloads: Counter<'listener' | 'result'>;
  readonly certificateExpiry: Gauge<'listener'>;
}

export function createListenerMetrics(
  registry: Registry,
  listeners: ReadonlyArray<{ name: ListenerName; tls: boolean; proxyProtocol: boolean }>,
): ListenerMetrics {
  const m: ListenerMetrics = {
    connections: new Counter({
      name: 'leadgate_connections_total',
      help: 'Connections accepted, by listener, protocol (http1, h2) and whether TLS',
      labelNames: ['listener', 'protocol', 'tls'] as const,
      registers: [registry],
    }),
    proxyProtocol: new Counter({
      name: 'leadgate_proxy_protocol_total',
      help: 'PROXY protocol headers, by listener and result: ok, local (real peer kept), refused (peer not in from), malformed, timeout',
      labelNames: ['listener', 'result'] as const,
      registers: [registry],
    }),
    tlsReloads: new Counter({
      name: 'leadgate_tls_reloads_total',
      help: 'Certificate reloads after a file change, by listener and result: ok or failed (the old pair keeps serving)',
      labelNames: ['listener', 'result'] as const,
      registers: [registry],
    }),
    certificateExpiry: new Gauge({
      name: 'leadgate_tls_certificate_expiry_timestamp_seconds',
      help: "When each TLS listener's certificate in use expires (unix seconds): alert before it does",
      labelNames: ['listener'] as const,
      aggregator: 'min',
      registers: [registry],
    }),
  };
  for (const l of listeners) {
    const tls = String(l.tls);
    for (const protocol of l.tls ? ['http1', 'h2'] : ['http1'])
      m.connections.inc({ listener: l.name, protocol, tls }, 0);
    if (l.proxyProtocol) {
      for (const result of ['ok', 'local', 'refused', 'malformed', 'timeout'] as const) {
        m.proxyProtocol.inc({ listener: l.name, result }, 0);
      }
    }
    if (l.tls) for (const result of ['ok', 'failed']) m.tlsReloads.inc({ listener: l.name, result }, 0);
  }
  return m;
}
