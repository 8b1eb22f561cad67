import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { constants, type Http2Stream } from 'node:http2';
import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { GatewayError } from '../contract/errors.js';

/**
 * One request to pass on. The headers are final (hygiene was done by the caller) and belong to
 * this job: an engine may adapt the object in place rather than copy it.
 */
export interface ForwardJob {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly target: URL;
  readonly headers: OutgoingHttpHeaders;
  /**
   * The request body: none, received whole, or a stream (coalesced, size- and rate-checked by
   * body.ts). The request itself is never read by the engine.
   */
  readonly body: Buffer | Readable | null;
  /** Longest wait for the upstream's response headers, from when the body has been sent. */
  readonly timeoutMs: number;
  /** Set on the response, over what the upstream sent (CORS grant, request id). */
  readonly responseHeaders: Readonly<Record<string, string>>;
  /**
   * Longest the answer may wait on the client (a write not taken, no `drain`): then the client's
   * connection (HTTP/1.1) or stream (HTTP/2) and the upstream request are both closed.
   */
  readonly sendTimeoutMs: number;
  /** Called when the send timeout closed this request. */
  onSendTimeout(): void;
  /** Called once the upstream's response headers arrived, with the time it took. */
  onUpstreamResponse(seconds: number): void;
  /** Called when the upstream could not be used; the caller answers with the error. */
  onError(error: GatewayError): void;
}

/** A request being forwarded. */
export interface ForwardHandle {
  /** Stops the upstream request and answers with `error` (once), or cuts the answer if it started. */
  fail(error: GatewayError): void;
  /** The client's response closed (its exchange says so): an unfinished upstream request stops. */
  closed(): void;
}

/** The forwarding engine behind one small interface, so engines can be measured and swapped. */
export interface Forwarder {
  forward(job: ForwardJob): ForwardHandle;
  close(): void;
}

/**
 * True when the client's response was written whole; false when the client left first. On h2,
 * Node's compat response reports `writableFinished` once its stream closed, reset or not: an
 * answer not ended by us (`writableEnded`) or a stream reset by the peer (`rstCode` other than
 * NO_ERROR) is a client that left.
 */
export function answeredWhole(res: ServerResponse): boolean {
  if (!res.writableFinished) return false;
  const stream = (res as { stream?: Http2Stream }).stream;
  return stream === undefined || (res.writableEnded && (stream.rstCode ?? 0) === 0);
}

/**
 * Cuts the client's answer: on HTTP/1.1 its connection, on HTTP/2 its stream alone, reset with
 * `code`: CANCEL when the client is why (it stopped reading), INTERNAL_ERROR when the gateway
 * cannot finish an answer it started (the upstream failed mid-answer), which every client reads
 * as a failed stream. Never NO_ERROR, a compat response's `destroy()`: before END_STREAM, a client
 * may read that as a whole answer (Node's does).
 */
export function cutAnswer(res: ServerResponse, code: number = constants.NGHTTP2_CANCEL): void {
  const stream = (res as { stream?: Http2Stream }).stream;
  if (stream === undefined) res.destroy();
  else if (!stream.destroyed) stream.close(code);
}

/**
 * {@link cutAnswer} for an answer the gateway cannot finish. On HTTP/1.1 without TLS the
 * connection is reset, not closed: an answer framed by the close (HTTP/1.0) would otherwise end as
 * a whole one ends. (Over TLS the close carries no close_notify, which a strict client notices.)
 */
export function failAnswer(res: ServerResponse): void {
  const socket = res.socket as (Socket & { encrypted?: boolean }) | null;
  if ((res as { stream?: Http2Stream }).stream === undefined && socket != null && socket.encrypted !== true) {
    try {
      socket.resetAndDestroy();
      return;
    } catch {
      // not a TCP socket: closed below
    }
  }
  cutAnswer(res, constants.NGHTTP2_INTERNAL_ERROR);
}

/**
 * The client's response is gone (its connection or h2 stream destroyed). An h2 compat response
 * has no `destroyed` of its own: its stream's is read.
 */
export function gone(res: ServerResponse): boolean {
  return res.destroyed === true || (res as { stream?: Http2Stream }).stream?.destroyed === true;
}

/** What either engine answers (or cuts an answer with) when the upstream is too slow. */
export const upstreamTimeout = (): GatewayError =>
  new GatewayError('upstream_timeout', 'the upstream did not answer in time');
