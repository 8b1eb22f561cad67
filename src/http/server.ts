import type { OutgoingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { NO_HEADERS } from '../admission/index.js';
import { routePath } from '../auth/path.js';
import type { Principal } from '../auth/pipeline.js';
import { GatewayError } from '../contract/errors.js';
import { type CorsHeaders, NO_CORS } from '../cors/cors.js';
import type { CallSpan } from '../tracing/index.js';
import { hasBody, RequestBody } from './body.js';
import { createEntry, type HandlerDeps, ITSELF } from './entry.js';
import type { Exchange } from './exchange.js';
import { upstreamHeaders } from './headers.js';
import { answerLookup } from './lookup.js';
import type { Entered, Forwarding, Judged } from './phase.js';

/**
 * The HTTP layer of the API listener: after the entry step (entry.ts: the wire rules, the drain,
 * §3, admission), its own part: the CORS preflight, the body bounds, then the lookup, the
 * forwarder or a problem. It decides nothing itself; it translates.
 */
export function createRequestHandler(deps: HandlerDeps) {
  const nowS = deps.now ?? (() => Math.floor(Date.now() / 1000));

  return createEntry(deps, {
    unanswered: 'refused',
    carriesRefusal: () => false,
    judges(ex, entered) {
      const { req, generation } = ex;
      if (generation.cors.isPreflight(req)) {
        preflight(ex, entered);
        return null;
      }
      const maxBody = generation.config.limits.maxBodyBytes;
      if (maxBody !== null && Number(req.headers['content-length'] ?? 0) > maxBody) {
        return new GatewayError('body_too_large', `the request body is larger than ${maxBody} bytes`);
      }
      return ITSELF;
    },
    refuses(ex, principal) {
      // A READ key's GET or HEAD carries no body (docs/decisions/2026-11-28-bodies-on-read-requests.md).
      if (principal.key.access === 'READ' && hasBody(ex.req)) {
        return new GatewayError('body_too_large', 'a request with a READ key may not have a body');
      }
      return null;
    },
    admitted(ex, judged, principal, cors, added) {
      answer(ex, judged, principal, withAdmission(cors, added));
    },
  });

  /** Admitted: the lookup is answered here, everything else forwarded. */
  function answer(ex: Exchange, judged: Judged, principal: Principal, headers: CorsHeaders): void {
    if (principal.lookupId !== null) lookup(ex, judged, principal, headers);
    else forward(ex, judged, principal, headers);
  }

  function preflight(ex: Exchange, entered: Entered) {
    const route = routePath(ex.req.url ?? '/');
    if (route instanceof GatewayError) return ex.refuse(route);
    const headers = ex.generation.cors.preflight(ex.req.headers.origin ?? '');
    if (headers === null) {
      return ex.refuse(new GatewayError('cors_origin_not_allowed', 'this origin may not call the API'), {});
    }
    ex.answeredInPlace(entered, 'preflight');
    ex.leaveBody();
    ex.res.writeHead(204, { ...headers, 'content-length': 0, 'x-request-id': ex.requestId });
    ex.res.end();
  }

  function forward(ex: Exchange, judged: Judged, principal: Principal, cors: CorsHeaders): void {
    const { req, res, generation } = ex;
    const config = generation.config;
    const peer = req.socket.remoteAddress;
    // Authenticated: now the client may send its body (RFC 9110 §10.1.1).
    if (req.headers.expect?.toLowerCase() === '100-continue') res.writeContinue();
    const headers = upstreamHeaders(req.headers, principal, {
      requestId: ex.requestId,
      peer: normalisePeer(peer),
      peerTrusted: judged.facts.peerTrusted(),
      encrypted: (req.socket as TLSSocket).encrypted === true,
      underscores: config.upstream.underscoreHeaders,
    });
    let call: CallSpan | null = null;
    if (ex.trace !== null) {
      const method = req.method ?? 'GET';
      call = ex.trace.call(`${method} upstream`, method, config.upstream.url);
      Object.assign(headers, call.headers);
    }
    const forwarding = ex.forward(judged, principal, call);
    if (!hasBody(req)) {
      send(ex, forwarding, headers, cors, null);
      return;
    }
    // Received whole when small, else streamed coalesced; too slow or too large ends it.
    new RequestBody(
      req,
      config.limits,
      deps.bodies,
      (body) => send(ex, forwarding, headers, cors, body),
      (error) => ex.fail(error),
      config.upstream.timeoutMs,
    );
  }

  /** The request goes to the upstream with its body (none, whole, or streamed). */
  function send(
    ex: Exchange,
    forwarding: Forwarding,
    headers: OutgoingHttpHeaders,
    cors: CorsHeaders,
    body: Buffer | Readable | null,
  ) {
    if (ex.answered) return;
    const config = ex.generation.config;
    forwarding.handle = deps.forwarder.forward({
      req: ex.req,
      res: ex.res,
      target: config.upstream.url,
      body,
      timeoutMs: config.upstream.timeoutMs,
      sendTimeoutMs: config.limits.sendTimeoutMs,
      headers,
      responseHeaders: { ...cors, 'x-request-id': ex.requestId },
      onUpstreamResponse(seconds) {
        forwarding.upstreamSeconds = seconds;
        deps.metrics.upstreamDuration.observe('forward', seconds);
      },
      onSendTimeout() {
        deps.metrics.connectionBounds.inc({ bound: 'send_timeout' });
      },
      onError(error) {
        ex.refuse(error);
      },
    });
  }

  function lookup(ex: Exchange, judged: Judged, principal: Principal, cors: CorsHeaders) {
    const { generation } = ex;
    const lookingUp = ex.lookUp(judged, principal);
    ex.leaveBody();
    const t0 = process.hrtime.bigint();
    const ctx = { keyName: principal.key.name, requestId: ex.requestId, trace: ex.trace };
    answerLookup(principal, generation.resolver, ctx, generation.config.leadToken.ttlS, nowS()).then(
      (answer) => {
        if (answer instanceof GatewayError) {
          deps.metrics.lookups.inc({ result: answer.code === 'lead_not_found' ? 'not_found' : 'refused' });
          return ex.refuse(answer, cors);
        }
        deps.metrics.lookups.inc({ result: 'found' });
        // The request line's upstream_ms; the histogram is observed by the resolver, per backend call.
        if (generation.config.leads.kind === 'upstream') {
          lookingUp.upstreamSeconds = Number(process.hrtime.bigint() - t0) / 1e9;
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
