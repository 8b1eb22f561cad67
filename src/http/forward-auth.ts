import type { IncomingHttpHeaders } from 'node:http';
import type { Principal } from '../auth/pipeline.js';
import { GatewayError } from '../contract/errors.js';
import { createEntry, type HandlerDeps } from './entry.js';
import type { Exchange } from './exchange.js';
import { identityHeaders } from './headers.js';
import type { Judged } from './phase.js';
import { forwardAuthRefusal, headersToRemove } from './reserved-headers.js';

export interface OriginalRequest {
  readonly method: string;
  readonly url: string;
}

const bad = (detail: string) => new GatewayError('bad_request', detail);

/** One proxy's pair of headers naming the original request, or null when it sent neither. */
function pair(method: unknown, uri: unknown, ownMethod: string): OriginalRequest | GatewayError | null {
  if (method === undefined && uri === undefined) return null;
  if (Array.isArray(method) || Array.isArray(uri))
    return bad('the original method and URI must be sent once each');
  if (typeof uri !== 'string' || uri === '') return bad('the original URI is missing');
  return { method: typeof method === 'string' && method !== '' ? method.toUpperCase() : ownMethod, url: uri };
}

/** The call names the original request itself (Envoy ext_authz sends its method and path). */
const namesItself = (own: OriginalRequest) =>
  own.method !== 'GET' || own.url.toLowerCase().startsWith('/api/v2/merchant/');

/**
 * Which request a forward-auth call asks about (CONTRACT §8, §10): `X-Original-Method`/`-URI`
 * (nginx, ingress-nginx), `X-Forwarded-Method`/`-Uri` (Traefik, Caddy), or the call itself (Envoy
 * ext_authz: a method other than GET, or a path under the prefix). A proxy sets only its own pair
 * and passes the rest through from the client, so a pair that disagrees with another pair, or
 * with a call that names the request itself, is an attempt to be judged on another request: 400.
 */
export function originalRequest(
  headers: IncomingHttpHeaders,
  own: OriginalRequest,
): OriginalRequest | GatewayError {
  const nginx = pair(headers['x-original-method'], headers['x-original-uri'], own.method);
  if (nginx instanceof GatewayError) return nginx;
  const traefik = pair(headers['x-forwarded-method'], headers['x-forwarded-uri'], own.method);
  if (traefik instanceof GatewayError) return traefik;
  const named = namesItself(own) ? own : (nginx ?? traefik ?? own);
  for (const p of [nginx, traefik]) {
    if (p !== null && (p.method !== named.method || p.url !== named.url)) {
      return bad('the call and its X-Original-* / X-Forwarded-* headers name different requests');
    }
  }
  return named;
}

/**
 * The forward-auth listener: every request is a question about another one. The §3 checks run on
 * the original method and URI (the URI through every path rule) with the call's own headers and
 * peer, after the entry step every listener shares (entry.ts: the wire rules, the drain); the answer is 200 with the identity headers for the proxy to copy upstream, empty body,
 * or the refusal, as the API listener would give it (or, when the call says
 * `X-Leadgate-Refusal: headers`, as nginx can carry it: problem.ts). The lookup is never answered here.
 */
export function createForwardAuthHandler(deps: HandlerDeps) {
  return createEntry(deps, {
    unanswered: 'auth',
    carriesRefusal: (req) => req.headers['x-leadgate-refusal'] === 'headers',
    judges(ex) {
      const { req } = ex;
      const original = originalRequest(req.headers, { method: req.method ?? 'GET', url: req.url ?? '/' });
      if (original instanceof GatewayError) return original;
      const copy = forwardAuthRefusal(req.headers);
      return copy === null ? original : bad(copy);
    },
    refuses(_ex, principal) {
      if (principal.lookupId === null) return null;
      return new GatewayError(
        'not_found',
        'the lead lookup is answered on the API listener: route /api/v2/merchant/leads/ there',
      );
    },
    admitted(ex, judged, principal, _cors, added) {
      allow(ex, judged, principal, added);
    },
  });
}

/** 200: the identity headers for the proxy to copy upstream, and the rate-limit fields. */
function allow(
  ex: Exchange,
  judged: Judged,
  principal: Principal,
  headers: Readonly<Record<string, string>>,
): void {
  ex.answeredInPlace(judged, 'auth');
  ex.leaveBody();
  const identity = identityHeaders(principal);
  ex.res.writeHead(200, {
    ...headers,
    ...identity,
    'x-envoy-auth-headers-to-remove': headersToRemove(identity),
    'x-request-id': ex.requestId,
    'cache-control': 'no-store',
    'content-length': 0,
  });
  ex.res.end();
}
