import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { GatewayError } from '../auth/errors.js';
import { routePath } from '../auth/path.js';
import type { PipelineResult, Principal } from '../auth/pipeline.js';
import type { ApiKey } from '../config/types.js';
import { parseAddress } from '../net/ip.js';
import type { Logger } from '../observability/log.js';
import type { Metrics } from '../observability/metrics.js';
import type { GatewayState } from '../state.js';
import type { CorsHeaders } from './cors.js';
import type { Forwarder } from './forward.js';
import { upstreamHeaders } from './headers.js';
import { answerLookup } from './lookup.js';
import { writeProblem } from './problem.js';

export interface Lifecycle {
  /** SIGTERM seen: answers carry `Connection: close`, /readyz is 503. */
  draining: boolean;
  /** The listener is closed: a request that still arrives on an open connection is refused. */
  stopped: boolean;
}

export interface HandlerDeps {
  readonly current: () => GatewayState;
  readonly forwarder: Forwarder;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly lifecycle: Lifecycle;
  readonly inflight: { count: number };
  readonly now?: () => number;
}

type Kind = 'forward' | 'lookup' | 'preflight' | 'refused';

/**
 * The HTTP layer of the API listener: request facts in, then the pipeline, then the lookup, the
 * forwarder or a problem. It decides nothing itself; it translates.
 */
export function createRequestHandler(deps: HandlerDeps) {
  const { forwarder, metrics, logger, lifecycle, inflight } = deps;
  const nowS = deps.now ?? (() => Math.floor(Date.now() / 1000));

  return function handle(req: IncomingMessage, res: ServerResponse): void {
    const started = process.hrtime.bigint();
    const requestId = randomUUID();
    const state = deps.current();
    const origin = req.headers.origin;
    let kind: Kind = 'refused';
    let code = 'ok';
    let key: ApiKey | null = null;
    let upstreamSeconds: number | null = null;
    inflight.count++;
    metrics.inflight.inc();

    res.on('close', () => {
      inflight.count--;
      metrics.inflight.dec();
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const status = res.writableFinished ? res.statusCode : 499;
      if (!res.writableFinished && code === 'ok') code = 'client_closed';
      metrics.requests.inc({ status: String(status), code, key: key?.name ?? '' });
      metrics.requestDuration.observe({ kind }, seconds);
      const logged = state.config.log.requests;
      if (logged === 'none' || (logged === 'errors' && status < 400)) return;
      const q = req.url?.indexOf('?') ?? -1;
      const line = {
        request_id: requestId,
        method: req.method,
        path: q === -1 ? req.url : req.url?.slice(0, q),
        status,
        key_name: key?.name,
        code,
        duration_ms: Math.round(seconds * 1e6) / 1e3,
        upstream_ms: upstreamSeconds === null ? undefined : Math.round(upstreamSeconds * 1e6) / 1e3,
      };
      if (status >= 500) logger.error(line, 'request');
      else logger.info(line, 'request');
    });

    const refuse = (error: GatewayError, extra: CorsHeaders = state.cors.grant(origin, key)) => {
      code = error.code;
      kind = 'refused';
      writeProblem(res, error, requestId, extra);
    };

    // Draining (and so stopped) or asked by the client: this answer ends the connection.
    if (lifecycle.draining || req.headers.connection === 'close') res.setHeader('connection', 'close');
    if (lifecycle.stopped) {
      refuse(new GatewayError('shutting_down', 'the gateway is shutting down'));
      return;
    }

    if (state.cors.isPreflight(req)) {
      const grant = routePath(req.url ?? '/');
      if (grant instanceof GatewayError) {
        refuse(grant);
        return;
      }
      const headers = state.cors.preflight(origin ?? '');
      if (headers === null) {
        refuse(new GatewayError('cors_origin_not_allowed', 'this origin may not call the API'), {});
        return;
      }
      kind = 'preflight';
      res.writeHead(204, { ...headers, 'content-length': 0, 'x-request-id': requestId });
      res.end();
      return;
    }

    const maxBody = state.config.limits.maxBodyBytes;
    if (maxBody !== null) {
      const length = Number(req.headers['content-length'] ?? 0);
      if (length > maxBody) {
        res.setHeader('connection', 'close');
        refuse(new GatewayError('body_too_large', `the request body is larger than ${maxBody} bytes`));
        return;
      }
    }

    const result: PipelineResult = state.authenticate({
      method: req.method ?? 'GET',
      url: req.url ?? '/',
      headers: req.headers,
      peer: req.socket.remoteAddress,
      nowS: nowS(),
    });
    key = result.key;
    if (result.error !== null || result.principal === null) {
      refuse(result.error ?? new GatewayError('internal_error', 'authentication gave no answer'));
      return;
    }
    const principal = result.principal;
    if (!state.cors.allows(origin, principal.key)) {
      refuse(new GatewayError('cors_origin_not_allowed', 'this API key may not be used from this origin'));
      return;
    }
    const cors = state.cors.grant(origin, principal.key);

    if (principal.lookupId !== null) {
      kind = 'lookup';
      lookup(principal, cors);
      return;
    }

    kind = 'forward';
    const peer = req.socket.remoteAddress;
    const peerAddr = state.config.trustedProxies.size > 0 && peer ? parseAddress(peer) : null;
    forwarder.forward({
      req,
      res,
      target: state.config.upstream.url,
      timeoutMs: state.config.upstream.timeoutMs,
      maxBodyBytes: maxBody,
      headers: upstreamHeaders(req.headers, principal, {
        requestId,
        peer: normalisePeer(peer),
        peerTrusted: peerAddr !== null && state.config.trustedProxies.matches(peerAddr),
        encrypted: (req.socket as TLSSocket).encrypted === true,
      }),
      responseHeaders: { ...cors, 'x-request-id': requestId },
      onUpstreamResponse(seconds) {
        upstreamSeconds = seconds;
        metrics.upstreamDuration.observe({ kind: 'forward' }, seconds);
      },
      onError(error) {
        refuse(error);
      },
    });

    function lookup(p: Principal, corsHeaders: CorsHeaders) {
      const t0 = process.hrtime.bigint();
      answerLookup(
        p,
        state.resolver,
        { keyName: p.key.name, requestId },
        state.config.leadToken.ttlS,
        nowS(),
      ).then(
        (answer) => {
          if (answer instanceof GatewayError) {
            metrics.lookups.inc({ result: answer.code === 'lead_not_found' ? 'not_found' : 'refused' });
            refuse(answer, corsHeaders);
            return;
          }
          metrics.lookups.inc({ result: 'found' });
          if (state.config.leads.kind === 'upstream') {
            upstreamSeconds = Number(process.hrtime.bigint() - t0) / 1e9;
          }
          const body = JSON.stringify(answer);
          res.writeHead(200, {
            ...corsHeaders,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            'cache-control': 'no-store',
            'x-request-id': requestId,
          });
          res.end(req.method === 'HEAD' ? undefined : body);
        },
        (err: unknown) => {
          metrics.lookups.inc({ result: 'error' });
          if (err instanceof GatewayError) {
            refuse(err, corsHeaders);
            return;
          }
          logger.error(
            { request_id: requestId, err: err instanceof Error ? err.message : 'unknown' },
            'lookup failed',
          );
          refuse(new GatewayError('internal_error', 'the lookup failed'), corsHeaders);
        },
      );
    }
  };
}

/** `::ffff:10.1.2.3` as `10.1.2.3`: the form written into X-Forwarded-For. */
function normalisePeer(peer: string | undefined): string | undefined {
  return peer?.startsWith('::ffff:') && peer.includes('.') ? peer.slice(7) : peer;
}
