import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { RequestFacts } from '../auth/facts.js';
import type { ApiKey } from '../config/types.js';
import { GatewayError } from '../contract/errors.js';
import type { CorsHeaders } from '../cors/cors.js';
import type { Logger } from '../observability/log.js';
import type { Metrics } from '../observability/metrics.js';
import type { RequestLog } from '../observability/request-log.js';
import type { GatewayState } from '../state.js';
import type { CallSpan, RequestTrace, RequestTracer } from '../tracing/index.js';
import type { ConnectionGuard, Failable } from './connection.js';
import { answeredWhole, type ForwardHandle } from './forward.js';
import { writeProblem } from './problem.js';
import { announcesBody } from './protocol.js';
import { routeTemplate } from './route.js';

export type Kind = 'forward' | 'lookup' | 'preflight' | 'auth' | 'refused';

export interface ExchangeDeps {
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly requestLog: RequestLog;
  readonly guard: ConnectionGuard;
  readonly inflight: { count: number };
  /** Null when tracing is off. */
  readonly tracer: RequestTracer | null;
}

/**
 * One request and its answer: the facts gathered on the way (key, kind, code, timings), the one
 * place that answers with a problem, and the metrics and log line written when it closes.
 */
export class Exchange implements Failable {
  readonly requestId = randomUUID();
  readonly started = process.hrtime.bigint();
  kind: Kind = 'refused';
  code = 'ok';
  key: ApiKey | null = null;
  upstreamSeconds: number | null = null;
  forwarding: ForwardHandle | null = null;
  /** This request's spans when it is sampled, else null. */
  readonly trace: RequestTrace | null;
  /** The span of the call to the upstream, once forwarding starts. */
  upstreamCall: CallSpan | null = null;
  /** A refusal is answered 403 with the real one in headers (nginx's auth_request; problem.ts). */
  refusalCarried = false;
  /** What the steps read of the request, once the entry step has made them (entry.ts). */
  facts: RequestFacts | null = null;
  /** Kept: Node detaches the socket from the request and response once answered. */
  readonly socket: Socket;

  constructor(
    private readonly deps: ExchangeDeps,
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly state: GatewayState,
  ) {
    this.socket = req.socket;
    (res as Owned)[EXCHANGE] = this;
    res.on('close', onResponseClose);
    this.trace = deps.tracer === null ? null : deps.tracer.begin(req.method ?? 'GET', req.headers);
    deps.inflight.count++;
  }

  /** True once an answer has started (or the connection is gone): nothing more may be written. */
  get answered(): boolean {
    return this.res.headersSent || this.res.destroyed;
  }

  /** Answers with a problem. A body the client still sends is not read: the connection ends. */
  refuse(
    error: GatewayError,
    cors: CorsHeaders = this.state.cors.grant(this.req.headers.origin, this.key),
  ): void {
    this.code = error.code;
    this.kind = 'refused';
    if (this.answered) {
      this.res.destroy();
      return;
    }
    this.leaveBody();
    writeProblem(this.res, error, this.requestId, cors, this.refusalCarried);
  }

  /** Answered in place: a body the client is still sending is not read, the connection ends. */
  leaveBody(): void {
    if (announcesBody(this.req) && !this.req.complete) this.closeAfter();
  }

  /** This answer is the connection's last; the close is bounded (see connection.ts). */
  closeAfter(): void {
    this.deps.guard.closeAfter(this.res, this.socket);
  }

  /** The connection failed under this request (bad chunk, body too slow): end it with `error`. */
  fail(error: GatewayError): void {
    this.closeAfter();
    if (this.forwarding !== null) this.forwarding.fail(error);
    else this.refuse(error);
  }

  /** A throw nobody expected: this request's 500, logged; the gateway serves on. */
  unexpected(err: unknown): void {
    this.deps.logger.error(
      { request_id: this.requestId, err: err instanceof Error ? err.name : 'unknown' },
      'unexpected error while serving a request',
    );
    if (this.forwarding !== null) this.forwarding.fail(internal);
    else this.refuse(internal);
  }

  /**
   * The response closed, answered or not: the one `close` listener of a request. The forwarder
   * stops an upstream request whose answer did not finish, the request is counted and logged,
   * then the connection guard may start the next pipelined request.
   */
  closed(): void {
    this.forwarding?.closed();
    this.account();
    this.deps.guard.ended(this.res, this.socket);
  }

  private account(): void {
    const { deps, res, req } = this;
    deps.inflight.count--;
    const seconds = Number(process.hrtime.bigint() - this.started) / 1e9;
    // An h2 stream reset by its client reports writableFinished too: answeredWhole tells them apart.
    const whole = answeredWhole(res);
    const status = whole ? res.statusCode : 499;
    if (!whole && this.code === 'ok') this.code = 'client_closed';
    deps.metrics.requests.add(status, this.code, this.key?.name ?? '');
    deps.metrics.requestDuration.observe(this.kind, seconds);
    if (this.trace !== null) this.endTrace(status);
    const logged = this.state.config.log.requests;
    if (logged === 'none' || (logged === 'errors' && status < 400)) return;
    const url = req.url ?? '';
    const q = url.indexOf('?');
    deps.requestLog({
      requestId: this.requestId,
      method: req.method,
      path: q === -1 ? url : url.slice(0, q),
      status,
      keyName: this.key?.name,
      code: this.code,
      durationMs: Math.round(seconds * 1e6) / 1e3,
      upstreamMs: this.upstreamSeconds === null ? undefined : Math.round(this.upstreamSeconds * 1e6) / 1e3,
    });
  }

  private endTrace(status: number): void {
    // The upstream answered (its status is the client's) or the call failed.
    this.upstreamCall?.end(this.upstreamSeconds === null ? undefined : status);
    this.trace?.end({
      status,
      route: routeTemplate(this.kind === 'lookup', this.req.url),
      code: this.code,
      keyName: this.key?.name,
    });
  }
}

const internal = new GatewayError('internal_error', 'the gateway failed to serve this request');

const EXCHANGE = Symbol('leadgate.exchange');
type Owned = ServerResponse & { [EXCHANGE]?: Exchange };

/** A `close` listener shared by every response (no closure per request). */
function onResponseClose(this: Owned): void {
  this[EXCHANGE]?.closed();
}
