import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { GatewayError } from '../contract/errors.js';
import { gone } from './forward.js';
import { answerOrCut, problemBody } from './problem.js';

/**
 * What the connection guard needs of a request in progress: a way to end it with an error (the
 * handlers' `Exchange`, exchange.ts, is one).
 */
export interface Failable {
  /** Answers this request with `error` if its answer has not started, else cuts it; then close. */
  fail(error: GatewayError): void;
}

/** What the guard keeps of one HTTP/1.1 connection, on its socket. */
interface ConnectionRecord {
  /** Answers started on this connection and not yet written. */
  pending: number;
  /** Pipelined requests waiting for the answers before theirs (see `begin`). */
  queue: Waiting[];
  /** An answer said `Connection: close`, or the connection broke: nothing after it is served. */
  last: boolean;
  /** The latest request that had a body to come when it arrived (Node says `end` only later). */
  receiving: Waiting | null;
  /** A client error waiting for the earlier answers (RFC 9112 §9.3.2), with its method if parsed. */
  deferred: { readonly error: GatewayError; readonly method: string | undefined } | null;
  /** A client error was seen: the parser is done with this connection. */
  errored: boolean;
  /** The connection ends with a bounded close rather than a plain one. */
  linger: boolean;
  /** Reading is held: `maxPipelined` requests wait for the answers before theirs. */
  held: boolean;
  /** While held: closes the connection when no answer has been written for `sendTimeoutMs`. */
  stall: NodeJS.Timeout | null;
}

/** A request the guard knows of: started (its exchange set) or waiting in the queue. */
interface Waiting {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly start: StartExchange;
  exchange: Failable | null;
}

/** Serves a request the guard let through; returns its exchange. One function per listener. */
export type StartExchange = (req: IncomingMessage, res: ServerResponse) => Failable;

const RECORD = Symbol('leadgate.connection');
/** What Node's HTTP server keeps on a socket it reads (lib/_http_server.js). */
type Tracked = Socket & {
  [RECORD]?: ConnectionRecord;
  /** Node's own "stop reading" flag: its parser pauses after the bytes it is executing. */
  _paused?: boolean;
  parser?: { resume(): void } | null;
};

export interface ConnectionGuardOptions {
  /** After a refusal with an unread body, or a client error: how long the client has to read it. */
  readonly lingerMs: number;
  /**
   * Pipelined requests that may wait for the answers before theirs. At this depth the connection
   * is not read until half of them have been answered (`limits.max_pipelined_requests`).
   */
  readonly maxPipelined: number;
  /**
   * A client error the guard answers itself (no exchange does): counted and logged once, as its
   * answer is written (never for an answer its client is gone before). `method` when one was
   * parsed (CONNECT). Returns the request id the answer carries.
   */
  onClientError(error: GatewayError, method?: string): string;
  /**
   * A connection held by the pipeline bound on which no answer is written for this long (its
   * client reads none) is closed (`limits.send_timeout_ms`).
   */
  readonly sendTimeoutMs: number;
  /** Counted each time a connection's reading is held by the pipeline bound. */
  onHold(): void;
  /** Counted each time a held connection is closed because its answers were not read. */
  onSendTimeout(): void;
}

/**
 * One HTTP/1.1 connection's order and end, for the API listener:
 *
 * - Answers go out in the order of the requests. Node queues the answers of pipelined requests
 *   itself; the errors its parser raises (400, 408, 431) do not pass through that queue, so an
 *   error for a later request waits here until every earlier answer is written, then closes.
 * - An error about the request still being received (a bad chunk, a body that never ends) is that
 *   request's own answer: it ends that request, never another one.
 * - A connection whose request body is left unread, or whose parser gave up, is not read further:
 *   the answer is flushed, the write side closed, reading stopped, and the socket destroyed after
 *   `lingerMs` so the client can read the answer first. No body is drained without bound.
 * - What one connection can make the process hold is bounded: once `maxPipelined` requests wait,
 *   the socket is not read until half of them are answered. Node only stops reading when answers
 *   it was given back up; the requests waiting here have no answer yet, so without this a client
 *   that writes and never reads has every request it sends parsed and kept (4 GiB in 25 s).
 */
export function createConnectionGuard(options: ConnectionGuardOptions) {
  const recordOf = (socket: Tracked): ConnectionRecord => {
    let conn = socket[RECORD];
    if (conn === undefined) {
      conn = {
        pending: 0,
        queue: [],
        last: false,
        receiving: null,
        deferred: null,
        errored: false,
        linger: false,
        held: false,
        stall: null,
      };
      socket[RECORD] = conn;
      holdable(socket, conn);
      const plain = socket.destroySoon.bind(socket);
      // Node ends a connection with destroySoon() after an answer that says `Connection: close`.
      socket.destroySoon = () => (conn?.linger ? lingerClose(socket, options.lingerMs) : plain());
    }
    return conn;
  };

  /**
   * A client error answered on the socket itself: counted, logged and written with its request id,
   * unless the client is gone (then nothing is sent, so nothing is counted).
   */
  const answerRaw = (socket: Socket, error: GatewayError, method?: string) => {
    if (socket.destroyed || !socket.writable) {
      socket.destroy();
      return;
    }
    writeRaw(socket, error, options.onClientError(error, method), options.lingerMs);
  };

  /** One answer is written (or its connection broke): the next request, the deferred error, or nothing. */
  const answered = (socket: Tracked, conn: ConnectionRecord, closes: boolean) => {
    conn.pending--;
    if (closes) {
      conn.last = true;
      conn.queue.length = 0;
      conn.deferred = null;
    }
    if (conn.pending > 0) return;
    const next = conn.queue.shift();
    if (next !== undefined) {
      if (conn.held) {
        if (conn.queue.length <= options.maxPipelined >> 1) release(socket, conn);
        else conn.stall?.refresh();
      }
      run(conn, next);
    } else if (conn.deferred !== null) {
      const { error, method } = conn.deferred;
      conn.deferred = null;
      answerRaw(socket, error, method);
    }
  };

  return {
    /**
     * A request arrived; `start` serves it and returns its exchange, which calls `ended` when its
     * response closes. Pipelined requests are served one after the other: a request starts once every earlier answer is written, and a request
     * behind an answer that closed the connection is never started: not forwarded, not answered,
     * not counted (RFC 9112 §9.6). Node has parsed it already; the guard is where it stops.
     */
    begin(req: IncomingMessage, res: ServerResponse, start: StartExchange): void {
      // An h2 stream is its own exchange: no pipeline to order, and its socket is the session's
      // (Node forbids pausing or writing it from a stream; see onHttp2).
      if (req.httpVersionMajor === 2) {
        try {
          start(req, res);
        } catch {
          // start answers its own errors; a throw before that (a stream reset under it) is this
          // stream's 500, or nothing when the stream is gone
          answerOrCut(res, new GatewayError('internal_error', 'the gateway failed to serve this request'));
        }
        return;
      }
      const socket = req.socket as Tracked;
      const conn = recordOf(socket);
      if (conn.last || conn.errored) return;
      const waiting: Waiting = { req, res, start, exchange: null };
      if (!req.complete) conn.receiving = waiting;
      if (conn.pending === 0 && conn.queue.length === 0) {
        run(conn, waiting);
        return;
      }
      conn.queue.push(waiting);
      if (conn.queue.length >= options.maxPipelined && !conn.held) {
        hold(socket, conn);
        conn.stall ??= setTimeout(stalled, options.sendTimeoutMs, socket, conn, options);
        conn.stall.unref();
        options.onHold();
      }
    },

    /**
     * A started request's response closed: its answer is written (`writableFinished`) or its
     * connection broke. Called once per started request, by its exchange (one `close` listener
     * per request, not one per party that cares).
     */
    ended(res: ServerResponse, socket: Socket): void {
      if (onHttp2(res)) return;
      const tracked = socket as Tracked;
      const conn = tracked[RECORD];
      if (conn === undefined) return;
      answered(tracked, conn, !res.writableFinished || endsConnection(res) || socket.destroyed);
    },

    /** This connection ends after the current answer, with a bounded close. */
    closeAfter(res: ServerResponse, socket: Socket): void {
      // h2: the stream ends with its answer; the session goes on (its close is the listener's).
      if (onHttp2(res)) return;
      recordOf(socket as Tracked).linger = true;
      if (!res.headersSent) res.setHeader('connection', 'close');
    },

    /**
     * CONNECT: no tunnels here. A 400 rather than Node's silent close. On HTTP/1.1 `target` is the
     * connection's socket; on h2 it is the CONNECT stream's response (the session goes on).
     */
    refuseTunnel(req: IncomingMessage, target: Socket | ServerResponse): void {
      const error = new GatewayError('bad_request', 'CONNECT is not served: this is not a forward proxy');
      if (req.httpVersionMajor === 2 || !isSocket(target)) {
        const res = target as ServerResponse;
        // a stream reset under it gets no answer, so no count
        const open = !gone(res) && !res.writableEnded;
        answerOrCut(res, error, open ? options.onClientError(error, req.method) : 'none');
        return;
      }
      const socket = target;
      // Node hands a CONNECT's socket over without its own listeners (lib/_http_server.js): a
      // reset or a failed write on it must not become an uncaught exception.
      socket.on('error', () => socket.destroy());
      const conn = recordOf(socket as Tracked);
      conn.errored = true;
      conn.linger = true;
      if (conn.pending > 0 || conn.queue.length > 0) {
        // Behind answers not written yet: it waits for them, as a parser error does. What Node no
        // longer does for those answers is done here: their writes go on when the socket drains,
        // and a client that ends its side is gone (Node's default: no half-open connections).
        conn.deferred = { error, method: req.method };
        socket.on('drain', () =>
          (socket as { _httpMessage?: NodeJS.EventEmitter })._httpMessage?.emit('drain'),
        );
        socket.once('end', () => socket.destroy());
        // Bytes sent after it are read and dropped, so that its end is seen; past a bound, a
        // client still sending is not waited for.
        let dropped = 0;
        socket.on('data', (chunk: Buffer) => {
          dropped += chunk.length;
          if (dropped > CONNECT_TRAILER_BYTES) socket.destroy();
        });
        return;
      }
      answerRaw(socket, error, req.method);
    },

    /** Node's `clientError`: a parse error, a header overflow or a request timeout. */
    clientError(err: NodeJS.ErrnoException, socket: Tracked): void {
      const conn = recordOf(socket);
      if (err.code === 'ECONNRESET' || !socket.writable) {
        socket.destroy();
        return;
      }
      if (conn.errored) return;
      conn.errored = true;
      conn.linger = true;
      const error = gatewayErrorOf(err);
      if (socket.bytesRead === 0) {
        // Nothing was sent (a preconnect left idle past the header timeout): no request to count
        // or log. Its 408 is still written, as before, with no id.
        writeRaw(socket, error, 'none', options.lingerMs);
        return;
      }
      const receiving = conn.receiving;
      if (receiving?.exchange != null && !receiving.req.complete) {
        // the request's own answer: its exchange counts and logs it when it closes
        receiving.exchange.fail(error);
      } else if (conn.pending > 0 || conn.queue.length > 0) {
        // The error is the answer of a request not started yet (or of the next one): it waits.
        if (receiving !== null && receiving.exchange === null && !receiving.req.complete) {
          conn.queue = conn.queue.filter((w) => w !== receiving);
        }
        conn.deferred = { error, method: undefined };
      } else {
        answerRaw(socket, error);
      }
    },
  };
}

export type ConnectionGuard = ReturnType<typeof createConnectionGuard>;

/**
 * Lets the guard hold a socket's reading against Node's own resumes: Node resumes a socket it
 * paused when its answers drain (socketOnDrain), and a request body being read resumes it too
 * (IncomingMessage#_read). While held, `resume` does nothing. On close the waiting requests are
 * let go at once (Node destroys them; the queue no longer keeps them reachable).
 */
function holdable(socket: Tracked, conn: ConnectionRecord): void {
  const resume = socket.resume;
  socket.resume = function (this: Tracked) {
    return conn.held ? this : resume.call(this);
  };
  socket.once('close', () => {
    if (conn.stall !== null) clearTimeout(conn.stall);
    conn.stall = null;
    conn.last = true;
    conn.held = false;
    conn.queue.length = 0;
    conn.receiving = null;
  });
}

/** Stop reading: Node pauses its parser after the bytes it is executing (it sees `_paused`). */
function hold(socket: Tracked, conn: ConnectionRecord): void {
  conn.held = true;
  socket._paused = true;
  socket.pause();
}

/** No answer written for `sendTimeoutMs` while held: the client reads nothing; the connection goes. */
function stalled(socket: Tracked, conn: ConnectionRecord, options: ConnectionGuardOptions): void {
  conn.stall = null;
  if (!conn.held || socket.destroyed) return;
  options.onSendTimeout();
  socket.destroy();
}

function release(socket: Tracked, conn: ConnectionRecord): void {
  conn.held = false;
  if (conn.stall !== null) clearTimeout(conn.stall);
  conn.stall = null;
  if (socket.destroyed) return;
  // Node pauses again on the next request if its own answers are still backed up.
  socket._paused = false;
  socket.parser?.resume();
  socket.resume();
}

/**
 * An answer on an h2 stream (the compat API's response). The guard is HTTP/1.1's: on h2 its
 * socket is a proxy of the session's, which Node forbids pausing or writing from a stream.
 */
function onHttp2(res: ServerResponse): boolean {
  return res.req?.httpVersionMajor === 2 || (res as { stream?: unknown }).stream !== undefined;
}

/** A connection's socket, not an h2 stream's response (which has no `destroySoon`). */
function isSocket(target: Socket | ServerResponse): target is Socket {
  return typeof (target as Partial<Socket>).destroySoon === 'function';
}

function run(conn: ConnectionRecord, waiting: Waiting): void {
  conn.pending++;
  waiting.exchange = waiting.start(waiting.req, waiting.res);
}

/** The answer says `Connection: close`, set by the handler or by Node (HTTP/1.0, a client's `close`). */
function endsConnection(res: ServerResponse): boolean {
  if (!res.shouldKeepAlive) return true;
  const value = res.getHeader('connection');
  return typeof value === 'string' && /(?:^|,)\s*close\s*(?:,|$)/i.test(value);
}

function gatewayErrorOf(err: NodeJS.ErrnoException): GatewayError {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new GatewayError('headers_too_large', 'the request headers are larger than allowed');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new GatewayError('request_timeout', 'the request was not received in time');
    default:
      return new GatewayError('bad_request', 'the request is not valid HTTP/1.1');
  }
}

/** What a client may send after a CONNECT that waits behind earlier answers (dropped unread). */
const CONNECT_TRAILER_BYTES = 64 * 1024;

/** A problem written straight onto the socket (no request object exists), then a bounded close. */
function writeRaw(socket: Socket, error: GatewayError, requestId: string, lingerMs: number): void {
  const body = problemBody(error, requestId);
  socket.write(
    `HTTP/1.1 ${error.status} ${error.title}\r\ncontent-type: application/problem+json\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\ncache-control: no-store\r\nx-request-id: ${requestId}\r\n` +
      `connection: close\r\n\r\n${body}`,
  );
  lingerClose(socket, lingerMs);
}

/** Flush and close the write side, stop reading, destroy after `ms`. */
function lingerClose(socket: Socket, ms: number): void {
  if (socket.destroyed) return;
  socket.pause();
  socket.end();
  const timer = setTimeout(() => socket.destroy(), ms);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
}
