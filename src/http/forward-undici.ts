import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import { GatewayError } from '../contract/errors.js';
import { type Deadline, Deadlines, type Expiring } from './deadlines.js';
import {
  answeredWhole,
  cutAnswer,
  type Forwarder,
  type ForwardHandle,
  type ForwardJob,
  gone,
  upstreamTimeout,
} from './forward.js';
import { downstreamHeaders } from './headers.js';
import { Pool } from './undici-pool.js';

/** Request headers undici sets itself or refuses; it frames the body from content-length or chunks. */
const REQUEST_SKIP = new Set(['transfer-encoding', 'expect', 'connection', 'keep-alive', 'upgrade']);

export interface UndiciForwarderOptions {
  readonly connections: number;
  readonly connectTimeoutMs: number;
  readonly keepAliveTimeoutMs?: number;
}

const TIMEOUTS = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** One forwarded request, as undici's dispatch handler: methods on a prototype, no closures. */
class ForwardHandler implements Dispatcher.DispatchHandler, Expiring {
  private controller: Dispatcher.DispatchController | null = null;
  private done = false;
  /**
   * Our own deadline for the response headers (undici's ticks in 500 ms steps). It starts when
   * the body has been sent: at once without one or with one received whole, else at its end.
   */
  private deadline: Deadline | null = null;
  /** The upstream's response headers arrived. */
  private responded = false;
  /** While the client takes none of the answer (a write waits for `drain`): the send timeout. */
  private blocked: NodeJS.Timeout | null = null;

  constructor(
    private readonly job: ForwardJob,
    private readonly started: bigint,
    private readonly deadlines: Deadlines,
  ) {
    const body = job.body;
    if (body === null || Buffer.isBuffer(body)) this.deadline = deadlines.add(this);
    else body.once('end', () => this.sent());
  }

  /** The streamed body has been handed to undici whole: the wait for the answer starts. */
  private sent(): void {
    if (!this.done && !this.responded) this.deadline = this.deadlines.add(this);
  }

  private stopDeadline(): void {
    if (this.deadline !== null) this.deadlines.remove(this.deadline);
    if (this.blocked !== null) clearTimeout(this.blocked);
    this.blocked = null;
  }

  /** No response headers within `timeoutMs`: 504. */
  expire(): void {
    this.fail(upstreamTimeout());
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.done || this.job.res.destroyed) controller.abort(new Error('client gone'));
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    if (this.done) {
      controller.abort(new Error('already answered'));
      return;
    }
    // An informational answer (103 Early Hints) is not passed on, as Node's client drops it for
    // the http-proxy engine: the final answer's head is the client's one head.
    if (statusCode < 200) return;
    this.responded = true;
    this.stopDeadline();
    const { job } = this;
    job.onUpstreamResponse(Number(process.hrtime.bigint() - this.started) / 1e9);
    job.res.writeHead(
      statusCode,
      downstreamHeaders(headers, job.responseHeaders, job.res.getHeader('connection')),
    );
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (!this.job.res.write(chunk)) {
      controller.pause();
      this.blocked ??= setTimeout(sendTimedOut, this.job.sendTimeoutMs, this);
      this.job.res.once('drain', () => this.drained());
    }
  }

  /** The client took what waited: the answer flows again. */
  private drained(): void {
    if (this.blocked !== null) clearTimeout(this.blocked);
    this.blocked = null;
    if (!this.done) this.controller?.resume();
  }

  /** The client took nothing for `sendTimeoutMs`: its connection (or h2 stream) and the upstream go. */
  sendTimedOut(): void {
    this.blocked = null;
    if (this.done) return;
    this.done = true;
    this.job.onSendTimeout();
    this.release(new Error('send timeout'));
    cutAnswer(this.job.res);
  }

  onResponseEnd(): void {
    this.stopDeadline();
    this.done = true;
    this.job.res.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.stopDeadline();
    if (this.done) return;
    if (gone(this.job.res)) {
      this.done = true; // the client left first
      return;
    }
    // Before the answer started: answered 502 or 504. After: the answer is cut, counted as such.
    const code = (err as NodeJS.ErrnoException).code ?? '';
    this.fail(
      TIMEOUTS.has(code)
        ? upstreamTimeout()
        : new GatewayError('upstream_unavailable', `the upstream is unavailable (${code || 'error'})`),
    );
  }

  /** Answers with `error` (once) and stops the upstream request. */
  fail(error: GatewayError): void {
    this.stopDeadline();
    if (this.done) return;
    this.done = true;
    this.release(error);
    this.job.onError(error);
  }

  /**
   * Stops the upstream request: undici closes its socket and drops the request. (undici 7 put an
   * aborted request back in its queue and opened a second connection for it, nodejs/undici#5845;
   * test/http/undici-abort.test.ts fails should that come back.)
   */
  private release(reason: Error): void {
    this.controller?.abort(reason);
  }

  /** The client's response closed: if it did not finish, stop the upstream request too. */
  closed(): void {
    this.stopDeadline();
    if (answeredWhole(this.job.res)) return;
    this.done = true;
    this.release(new Error('client gone'));
  }
}

function sendTimedOut(handler: ForwardHandler): void {
  handler.sendTimedOut();
}

/**
 * The forwarding engine on undici (`Pool.dispatch`): one keep-alive pool per upstream origin,
 * bodies streamed both ways with backpressure, upstream refused or reset → 502, no response
 * headers within `timeoutMs` → 504, a client that goes away aborts the upstream request.
 */
export function createUndiciForwarder(options: UndiciForwarderOptions): Forwarder {
  const pools = new Map<string, Pool>();
  const deadlines = new Map<number, Deadlines>();
  const deadlinesOf = (ms: number): Deadlines => {
    let list = deadlines.get(ms);
    if (list === undefined) {
      list = new Deadlines(ms);
      deadlines.set(ms, list);
    }
    return list;
  };
  const poolFor = (origin: string): Pool => {
    let pool = pools.get(origin);
    if (pool === undefined) {
      pool = new Pool(origin, {
        connections: options.connections,
        connectTimeout: options.connectTimeoutMs,
        keepAliveTimeout: options.keepAliveTimeoutMs ?? 4_000,
        pipelining: 1,
      });
      pools.set(origin, pool);
    }
    return pool;
  };

  return {
    forward(job: ForwardJob): ForwardHandle {
      const { req } = job;
      const handler = new ForwardHandler(job, process.hrtime.bigint(), deadlinesOf(job.timeoutMs));
      const base = job.target.pathname === '/' ? '' : job.target.pathname.replace(/\/$/, '');
      poolFor(job.target.origin).dispatch(
        {
          path: base + (req.url ?? '/'),
          method: (req.method ?? 'GET') as Dispatcher.HttpMethod,
          headers: requestHeaders(job.headers),
          body: job.body,
          // The header wait is the handler's own timer; this is only a backstop.
          headersTimeout: job.timeoutMs + 1_000,
          bodyTimeout: job.timeoutMs,
        },
        handler,
      );
      return handler;
    },
    close(): void {
      for (const pool of pools.values()) void pool.destroy();
      pools.clear();
    },
  };
}

/**
 * The job's headers, made fit for undici in place (the object is built for this request alone):
 * the names it frames or refuses itself removed, numbers as text. No second copy per request.
 */
function requestHeaders(headers: OutgoingHttpHeaders): Record<string, string | string[]> {
  for (const name of REQUEST_SKIP) delete headers[name];
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined) delete headers[name];
    else if (typeof value === 'number') headers[name] = String(value);
  }
  return headers as Record<string, string | string[]>;
}
