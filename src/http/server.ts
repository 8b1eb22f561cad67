import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { NO_HEADERS } from '../admission/index.js';
import { routePath } from '../auth/path.js';
import type { Principal } from '../auth/pipeline.js';
import { GatewayError } from '../contract/errors.js';
import { type CorsHeaders, NO_CORS } from '../cors/cors.js';
import { parseAddress } from '../net/ip.js';
import type { Logger } from '../observability/log.js';
import type { Metrics } from '../observability/metrics.js';
import type { RequestLog } from '../observability/request-log.js';
import type { GatewayState } from '../state.js';
import type { RequestTracer } from '../tracing/index.js';
import { type BodyWatch, hasBody, RequestBody } from './body.js';
import type { ConnectionGuard } from './connection.js';
import { closesConnection, type Lifecycle } from './drain.js';
import { Exchange } from './exchange.js';
import type { Forwarder } from './forward.js';
import { upstreamHeaders } from './headers.js';
import { answerLookup } from './lookup.js';
import { checkWire } from './protocol.js';

export interface HandlerDeps {
  readonly current: () => GatewayState;
  readonly forwarder: Forwarder;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly requestLog: RequestLog;
  readonly guard: ConnectionGuard;
  /** The request bodies in progress, checked against the minimum data rate. */
  readonly bodies: BodyWatch;
  readonly lifecycle: Lifecycle;
  readonly inflight: { count: number };
  readonly tracer: RequestTracer | null;
  readonly now?: () => number;
}

/**
 * The HTTP layer of the API listener: the wire rules, then the §3 pipeline, then the lookup, the
 * forwarder or a problem. It decides nothing itself; it translates. No throw leaves it: an
 * unexpected one is that request's 500.
 */
export function createRequestHandler(deps: HandlerDeps) {
  const nowS = deps.now ?? (() => Math.floor(Date.now() / 1000));

  const start = (req: IncomingMessage, res: ServerResponse): Exchange => {
    const ex = new Exchange(deps, req, res, deps.current());
    try {
      serve(ex);
    } catch (err) {
      ex.unexpected(err);
    }
    return ex;
  };

  return function handle(req: IncomingMessage, res: ServerResponse): void {
    deps.guard.begin(req, res, start);
  };

  function serve(ex: Exchange) {
    const { req, res, state } = ex;
    // Closing during the drain (see drain.ts), or an Upgrade (Node stops parsing after one): last
    // answer. A client's own `Connection: close` Node honours itself.
    if (closesConnection(deps.lifecycle)) res.setHeader('connection', 'close');
    if (req.headers.upgrade !== undefined) ex.closeAfter();
    if (deps.lifecycle.stopped)
      return ex.refuse(new GatewayError('shutting_down', 'the gateway is shutting down'));

    const wireError = checkWire(req, state.config.limits.maxHeaderCount);
    if (wireError !== null) {
      ex.closeAfter();
      return ex.refuse(wireError);
    }
    if (state.cors.isPreflight(req)) return preflight(ex);

    const maxBody = state.config.limits.maxBodyBytes;
    if (maxBody !== null && Number(req.headers['content-length'] ?? 0) > maxBody) {
      return ex.refuse(
        new GatewayError('body_too_large', `the request body is larger than ${maxBody} bytes`),
      );
    }

    const result = state.authenticate({
      method: req.method ?? 'GET',
      url: req.url ?? '/',
      headers: req.headers,
      peer: req.socket.remoteAddress,
      nowS: nowS(),
    });
    ex.key = result.key;
    if (result.error !== null || result.principal === null) {
      return ex.refuse(result.error ?? new GatewayError('internal_error', 'authentication gave no answer'));
    }
    const principal = result.principal;
    const origin = req.headers.origin;
    if (!state.cors.allows(origin, principal.key)) {
      return ex.refuse(
        new GatewayError('cors_origin_not_allowed', 'this API key may not be used from this origin'),
      );
    }
    // A READ key's GET or HEAD carries no body (docs/decisions/2026-11-28-bodies-on-read-requests.md).
    if (principal.key.access === 'READ' && hasBody(req)) {
      return ex.refuse(new GatewayError('body_too_large', 'a request with a READ key may not have a body'));
    }
    const cors = state.cors.grant(origin, principal.key);
    ex.admit(principal, cors, (added) => answer(ex, principal, withAdmission(cors, added)));
  }

  /** Admitted: the lookup is answered here, everything else forwarded. */
  function answer(ex: Exchange, principal: Principal, headers: CorsHeaders): void {
    if (principal.lookupId !== null) lookup(ex, principal, headers);
    else forward(ex, principal, headers);
  }

  function preflight(ex: Exchange) {
    const route = routePath(ex.req.url ?? '/');
    if (route instanceof GatewayError) return ex.refuse(route);
    const headers = ex.state.cors.preflight(ex.req.headers.origin ?? '');
    if (headers === null) {
      return ex.refuse(new GatewayError('cors_origin_not_allowed', 'this origin may not call the API'), {});
    }
    ex.kind = 'preflight';
    ex.leaveBody();
    ex.res.writeHead(204, { ...headers, 'content-length': 0, 'x-request-id': ex.requestId });
    ex.res.end();
  }

  function forward(ex: Exchange, principal: Principal, cors: CorsHeaders): void {
    const { req, res, state } = ex;
    ex.kind = 'forward';
    const config = state.config;
    const peer = req.socket.remoteAddress;
    const peerAddr = config.trustedProxies.size > 0 && peer ? parseAddress(peer) : null;
    // Authenticated: now the client may send its body (RFC 9110 §10.1.1).
    if (req.headers.expect?.toLowerCase() === '100-continue') res.writeContinue();
    const headers = upstreamHeaders(req.headers, principal, {
      requestId: ex.requestId,
      peer: normalisePeer(peer),
      peerTrusted: peerAddr !== null && config.trustedProxies.matches(peerAddr),
      encrypted: (req.socket as TLSSocket).encrypted === true,
      underscores: config.upstream.underscoreHeaders,
    });
    if (ex.trace !== null) {
      const method = req.method ?? 'GET';
      ex.upstreamCall = ex.trace.call(`${method} upstream`, method, config.upstream.url);
      Object.assign(headers, ex.upstreamCall.headers);
    }
    if (!hasBody(req)) {
      send(ex, headers, cors, null);
      return;
    }
    // Received whole when small, else streamed coalesced; too slow or too large ends it.
    new RequestBody(
      req,
      config.limits,
      deps.bodies,
      (body) => send(ex, headers, cors, body),
      (error) => ex.fail(error),
      config.upstream.timeoutMs,
    );
  }

  /** The request goes to the upstream with its body (none, whole, or streamed). */
  function send(
    ex: Exchange,
    headers: OutgoingHttpHeaders,
    cors: CorsHeaders,
    body: Buffer | Readable | null,
  ) {
    if (ex.answered) return;
    const config = ex.state.config;
    ex.forwarding = deps.forwarder.forward({
      req: ex.req,
      res: ex.res,
      target: config.upstream.url,
      body,
      timeoutMs: config.upstream.timeoutMs,
      sendTimeoutMs: config.limits.sendTimeoutMs,
      headers,
      responseHeaders: { ...cors, 'x-request-id': ex.requestId },
      onUpstreamResponse(seconds) {
        ex.upstreamSeconds = seconds;
        deps.metrics.upstreamDuration.observe('forward', seconds);
      },
      onError(error) {
        ex.refuse(error);
      },
      onSendTimeout() {
        deps.metrics.connectionBounds.inc({ bound: 'send_timeout' });
      },
    });
  }

  function lookup(ex: Exchange, principal: Principal, cors: CorsHeaders) {
    const { state } = ex;
    ex.kind = 'lookup';
    ex.leaveBody();
    const t0 = process.hrtime.bigint();
    const ctx = { keyName: principal.key.name, requestId: ex.requestId, trace: ex.trace };
    answerLookup(principal, state.resolver, ctx, state.config.leadToken.ttlS, nowS()).then(
      (answer) => {
        if (answer instanceof GatewayError) {
          deps.metrics.lookups.inc({ result: answer.code === 'lead_not_found' ? 'not_found' : 'refused' });
          return ex.refuse(answer, cors);
        }
        deps.metrics.lookups.inc({ result: 'found' });
        if (state.config.leads.kind === 'upstream') {
          ex.upstreamSeconds = Number(process.hrtime.bigint() - t0) / 1e9;
          deps.metrics.upstreamDuration.observe('lookup', ex.upstreamSeconds);
        }
        if (ex.answered) return;
        const body = JSON.stringify(answer);
        ex.res.writeHead(200, {
          ...cors,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'cache-control': 'no-store',
          'x-request-id': ex.requestId,
        });
        ex.res.end(ex.req.method === 'HEAD' ? undefined : body);
      },
      (err: unknown) => {
        deps.metrics.lookups.inc({ result: 'error' });
        if (err instanceof GatewayError) return ex.refuse(err, cors);
        ex.unexpected(err);
      },
    );
  }
}

/** `::ffff:10.1.2.3` as `10.1.2.3`: the form written into X-Forwarded-For. */
function normalisePeer(peer: string | undefined): string | undefined {
  return peer?.startsWith('::ffff:') && peer.includes('.') ? peer.slice(7) : peer;
}

/** CORS headers and the admission's (RateLimit fields), a new object only when both have some. */
function withAdmission(cors: CorsHeaders, added: Readonly<Record<string, string>>): CorsHeaders {
  if (added === NO_HEADERS) return cors;
  return cors === NO_CORS ? added : { ...cors, ...added };
}
