import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { Principal } from '../auth/pipeline.js';
import { FRAMING, isReserved, type UnderscorePolicy } from './reserved-headers.js';

export interface HopFacts {
  readonly requestId: string;
  readonly peer: string | undefined;
  /** The peer is a trusted proxy: its X-Forwarded-For chain and proto are kept and extended. */
  readonly peerTrusted: boolean;
  readonly encrypted: boolean;
  readonly underscores: UnderscorePolicy;
}

/** CONTRACT §5: what the upstream receives, from what the client sent. */
export function upstreamHeaders(
  incoming: IncomingHttpHeaders,
  principal: Principal,
  hop: HopFacts,
): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  const connection = incoming.connection;
  const named =
    typeof connection === 'string' && connection !== 'keep-alive' && connection !== 'close'
      ? new Set(connection.split(',').map((h) => h.trim().toLowerCase()))
      : null;
  for (const name in incoming) {
    if (isReserved(name, hop.underscores) || (named?.has(name) && !FRAMING.has(name))) continue;
    out[name] = incoming[name];
  }
  const peer = hop.peer ?? '';
  const priorFor = hop.peerTrusted ? incoming['x-forwarded-for'] : undefined;
  out['x-forwarded-for'] = priorFor
    ? `${Array.isArray(priorFor) ? priorFor.join(', ') : priorFor}, ${peer}`
    : peer;
  const priorProto = hop.peerTrusted ? incoming['x-forwarded-proto'] : undefined;
  out['x-forwarded-proto'] =
    typeof priorProto === 'string' && /^https?$/.test(priorProto)
      ? priorProto
      : hop.encrypted
        ? 'https'
        : 'http';
  out['x-request-id'] = hop.requestId;
  return Object.assign(out, identityHeaders(principal));
}

/** CONTRACT §5: who is calling, for the upstream (or, in forward-auth, for the proxy to copy). */
export function identityHeaders(principal: Principal): Record<string, string> {
  const key = principal.key;
  const out: Record<string, string> = { 'x-api-key-name': key.name, 'x-api-key-access': key.access };
  if (key.purpose !== null) out['x-api-key-purpose'] = key.purpose;
  if (principal.lead?.via === 'token') out['x-lead-id'] = principal.lead.leadId;
  return out;
}

/** Response headers that belong to the upstream connection, not to the client's. */
const DOWNSTREAM_SKIPPED = new Set(['connection', 'keep-alive', 'transfer-encoding', 'proxy-connection']);

/**
 * What the client receives, from what the upstream answered, for either engine: hop-by-hop
 * headers dropped (a `Connection: close` the gateway set, on drain or on request, wins), the
 * gateway's own headers set over the upstream's (`Vary` appended), and CORS owned by the
 * gateway: an upstream's own grant never reaches the browser.
 */
export function downstreamHeaders(
  upstream: IncomingHttpHeaders,
  own: Readonly<Record<string, string>>,
  connection: number | string | string[] | undefined,
): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  for (const name in upstream) {
    if (!DOWNSTREAM_SKIPPED.has(name)) out[name] = upstream[name];
  }
  for (const name in own) {
    const value = own[name];
    if (value === undefined) continue;
    out[name] = name === 'vary' && out.vary ? `${out.vary}, ${value}` : value;
  }
  if (!('access-control-allow-origin' in own)) {
    delete out['access-control-allow-origin'];
    delete out['access-control-allow-credentials'];
  }
  if (connection !== undefined) out.connection = String(connection);
  return out;
}
