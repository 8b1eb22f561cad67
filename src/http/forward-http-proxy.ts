import type { Agent, IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import httpProxy from 'http-proxy';
import { GatewayError } from '../contract/errors.js';
import {
  answeredWhole,
  cutAnswer,
  type Forwarder,
  type ForwardJob,
  gone,
  upstreamTimeout,
} from './forward.js';
import { downstreamHeaders } from './headers.js';

interface InFlight {
  readonly job: ForwardJob;
  readonly started: bigint;
  /** The wait for the answer's headers, then (while it flows) for its next byte. */
  timer: NodeJS.Timeout | null;
  proxyReq: { destroy(error?: Error): unknown } | null;
  failed: GatewayError | null;
  /** The upstream's response headers arrived. */
  answered: boolean;
  /** The client left before its answer was whole: nothing more is sent upstream. */
  left: boolean;
  /** While the client takes none of the answer: the send timeout. */
  blocked: NodeJS.Timeout | null;
}

/** The client takes the answer again (or it ended): no send timeout. */
function unblock(flight: InFlight): void {
  if (flight.blocked !== null) clearTimeout(flight.blocked);
  flight.blocked = null;
}

/**
 * The alternative engine (`upstream.engine: http-proxy`), loaded only when configured: http-proxy
 * has had no release since 2020 and calls `util._extend`, which Node 22+ reports once per process
 * as DEP0060. The default engine (undici) never loads it.
 *
 * `http-proxy` with a keep-alive agent (without one it closes every upstream connection).
 * Request bodies as body.ts hands them on; answers stream back untouched. Upstream refused or
 * reset → 502, no response headers within `timeoutMs` of the body's end → 504 (and mid-answer, no
 * byte for `timeoutMs` while the client reads: the answer cut, 504), a client that goes away
 * aborts the upstream request.
 */
export function createHttpProxyForwarder(agent: Agent): Forwarder {
  const proxy = httpProxy.createProxyServer({ agent, xfwd: false, changeOrigin: false, ws: false });
  const inflight = new WeakMap<IncomingMessage, InFlight>();

  const fail = (flight: InFlight, error: GatewayError) => {
    if (flight.failed) return;
    flight.failed = error;
    if (flight.timer) clearTimeout(flight.timer);
    flight.proxyReq?.destroy();
    flight.job.onError(error);
  };

  proxy.on('proxyReq', (proxyReq, req) => {
    const flight = inflight.get(req);
    if (!flight) return;
    flight.proxyReq = proxyReq;
    if (flight.failed || flight.left) proxyReq.destroy();
  });
  proxy.on('proxyRes', (proxyRes, req, res) => {
    const flight = inflight.get(req);
    if (!flight) return;
    if (flight.timer) clearTimeout(flight.timer);
    flight.timer = null;
    flight.answered = true;
    flight.job.onUpstreamResponse(Number(process.hrtime.bigint() - flight.started) / 1e9);
    proxyRes.headers = downstreamHeaders(
      proxyRes.headers,
      flight.job.responseHeaders,
      // http-proxy writes `keep-alive` where the answer names no connection: a client that asked
      // for close (or HTTP/1.0) must get it, so say it here.
      res.getHeader('connection') ?? (res.shouldKeepAlive ? undefined : 'close'),
    );
    // While the answer flows, no byte of it for `timeoutMs` is the upstream stalling (undici's
    // bodyTimeout): its answer is cut, 504. Not while paused: that wait is the client's.
    const stalled = () => {
      flight.timer = null;
      if (!answeredWhole(res) && !flight.left) fail(flight, upstreamTimeout());
    };
    const flowing = () => {
      if (flight.timer) clearTimeout(flight.timer);
      flight.timer = flight.failed ? null : setTimeout(stalled, flight.job.timeoutMs);
    };
    const held = () => {
      if (flight.timer) clearTimeout(flight.timer);
      flight.timer = null;
    };
    flowing();
    proxyRes.on('data', () => flight.timer?.refresh());
    // The answer is piped: the pipe pauses it while the client takes nothing (a write waits for
    // `drain`). Paused for `sendTimeoutMs`: the client's connection (or h2 stream) and the upstream go.
    proxyRes.on('pause', () => {
      held();
      flight.blocked ??= setTimeout(() => {
        flight.blocked = null;
        if (answeredWhole(res) || flight.left) return;
        flight.left = true;
        flight.job.onSendTimeout();
        flight.proxyReq?.destroy();
        cutAnswer(res);
      }, flight.job.sendTimeoutMs);
    });
    proxyRes.on('resume', () => {
      unblock(flight);
      flowing();
    });
    proxyRes.on('end', () => {
      unblock(flight);
      held();
    });
    // An upstream that dies mid-body: the client's answer is cut and counted as the upstream's
    // failure (the exchange's refusal); never a crash. Once the client left, only cut.
    const cut = () => {
      if (answeredWhole(res)) return;
      if (flight.left || gone(res)) cutAnswer(res);
      else fail(flight, new GatewayError('upstream_unavailable', 'the upstream cut its answer'));
    };
    proxyRes.on('error', cut);
    proxyRes.on('aborted', cut);
  });
  proxy.on('econnreset', () => {
    // The client went away first; http-proxy aborts the upstream request itself.
  });

  return {
    forward(job) {
      const flight: InFlight = {
        job,
        started: process.hrtime.bigint(),
        timer: null,
        proxyReq: null,
        failed: null,
        answered: false,
        left: false,
        blocked: null,
      };
      inflight.set(job.req, flight);
      const wait = () => {
        if (flight.failed || flight.answered) return;
        flight.timer = setTimeout(() => {
          fail(flight, upstreamTimeout());
        }, job.timeoutMs);
      };
      job.req.headers = job.headers as IncomingMessage['headers'];
      // The body as body.ts hands it on (never the request itself); the wait for the answer
      // starts once it has been sent.
      const body = job.body;
      let buffer: Readable | undefined;
      if (body === null) {
        wait(); // http-proxy pipes the request, which has no body
      } else if (Buffer.isBuffer(body)) {
        buffer = Readable.from([body]);
        wait();
      } else {
        buffer = body;
        body.once('end', wait);
      }
      proxy.web(job.req, job.res, { target: job.target.href, buffer }, (err: NodeJS.ErrnoException) => {
        if (flight.failed) return;
        // an h2 stream reset under it may have no socket left to read
        const socket = job.req.socket as Socket | null | undefined;
        if (socket == null || socket.destroyed) return; // the client left; nothing to answer
        fail(
          flight,
          new GatewayError('upstream_unavailable', `the upstream is unavailable (${err.code ?? 'error'})`),
        );
      });
      return {
        fail: (error) => fail(flight, error),
        closed() {
          if (flight.timer) clearTimeout(flight.timer);
          unblock(flight);
          if (answeredWhole(job.res)) return;
          // Destroyed before the agent gave it a socket, a request is never written.
          flight.left = true;
          flight.proxyReq?.destroy();
        },
      };
    },
    close() {
      proxy.close();
    },
  };
}
