import type { Agent, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import httpProxy from 'http-proxy';
import { GatewayError } from '../auth/errors.js';
import { downstreamHeaders } from './headers.js';

/** One request to pass on. The headers are final: hygiene was done by the caller. */
export interface ForwardJob {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly target: URL;
  readonly headers: OutgoingHttpHeaders;
  /** Longest wait for the upstream's response headers. */
  readonly timeoutMs: number;
  /** A body larger than this (counted as it streams, for chunked bodies too) is cut off: 413. */
  readonly maxBodyBytes: number | null;
  /** Set on the response, over what the upstream sent (CORS grant, request id). */
  readonly responseHeaders: Readonly<Record<string, string>>;
  /** Called once the upstream's response headers arrived, with the time it took. */
  onUpstreamResponse(seconds: number): void;
  /** Called when the upstream could not be used; the caller answers with the error. */
  onError(error: GatewayError): void;
}

/** A request being forwarded. */
export interface ForwardHandle {
  /** Stops the upstream request and answers with `error` (once), or cuts the answer if it started. */
  fail(error: GatewayError): void;
}

/** The forwarding engine behind one small interface, so engines can be measured and swapped. */
export interface Forwarder {
  forward(job: ForwardJob): ForwardHandle;
  close(): void;
}

interface InFlight {
  readonly job: ForwardJob;
  readonly started: bigint;
  timer: NodeJS.Timeout | null;
  proxyReq: { destroy(error?: Error): unknown } | null;
  failed: GatewayError | null;
}

/**
 * `http-proxy` with a keep-alive agent (without one it closes every upstream connection).
 * Bodies stream both ways untouched. Upstream refused or reset → 502, no response headers within
 * `timeoutMs` → 504, a client that goes away aborts the upstream request.
 */
export function createHttpProxyForwarder(agent: Agent): Forwarder {
  const proxy = httpProxy.createProxyServer({ agent, xfwd: false, changeOrigin: false, ws: false });
  const inflight = new WeakMap<IncomingMessage, InFlight>();

  const fail = (state: InFlight, error: GatewayError) => {
    if (state.failed) return;
    state.failed = error;
    if (state.timer) clearTimeout(state.timer);
    state.proxyReq?.destroy();
    state.job.onError(error);
  };

  proxy.on('proxyReq', (proxyReq, req) => {
    const state = inflight.get(req);
    if (!state) return;
    state.proxyReq = proxyReq;
    if (state.failed) proxyReq.destroy();
  });
  proxy.on('proxyRes', (proxyRes, req, res) => {
    const state = inflight.get(req);
    if (!state) return;
    if (state.timer) clearTimeout(state.timer);
    state.timer = null;
    state.job.onUpstreamResponse(Number(process.hrtime.bigint() - state.started) / 1e9);
    proxyRes.headers = downstreamHeaders(
      proxyRes.headers,
      state.job.responseHeaders,
      res.getHeader('connection'),
    );
    // An upstream that dies mid-body: end the client's response too, never crash.
    proxyRes.on('error', () => res.destroy());
    proxyRes.on('aborted', () => res.destroy());
  });
  proxy.on('econnreset', () => {
    // The client went away first; http-proxy aborts the upstream request itself.
  });

  return {
    forward(job) {
      const state: InFlight = {
        job,
        started: process.hrtime.bigint(),
        timer: null,
        proxyReq: null,
        failed: null,
      };
      inflight.set(job.req, state);
      state.timer = setTimeout(() => {
        fail(state, new GatewayError('upstream_timeout', 'the upstream did not answer in time'));
      }, job.timeoutMs);
      job.req.headers = job.headers as IncomingMessage['headers'];
      if (job.maxBodyBytes !== null) {
        const limit = job.maxBodyBytes;
        let size = 0;
        job.req.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > limit && !state.failed) {
            fail(state, new GatewayError('body_too_large', `the request body is larger than ${limit} bytes`));
          }
        });
      }
      job.res.on('close', () => {
        if (state.timer) clearTimeout(state.timer);
        if (!job.res.writableFinished) state.proxyReq?.destroy();
      });
      proxy.web(job.req, job.res, { target: job.target.href }, (err: NodeJS.ErrnoException) => {
        if (state.failed) return;
        const socket = job.req.socket as Socket;
        if (socket.destroyed) return; // the client left; nothing to answer
        fail(
          state,
          new GatewayError('upstream_unavailable', `the upstream is unavailable (${err.code ?? 'error'})`),
        );
      });
      return { fail: (error) => fail(state, error) };
    },
    close() {
      proxy.close();
    },
  };
}
