import type http from 'node:http';
import type http2 from 'node:http2';
import type { ConnectionBounds, H1Options } from './types.js';

/**
 * CONTRACT §11's bounds on an h2 connection, from Node's own http2 settings: few concurrent
 * streams, a header list no bigger than HTTP/1.1's, and a session that sends GOAWAY once a peer
 * resets or sends invalid frames past a small budget (rapid reset, CVE-2023-44487) or holds more
 * header memory than allowed (CONTINUATION floods, CVE-2024-27316).
 */
export function h2Limits(h1: H1Options): http2.SecureServerOptions {
  return {
    settings: { maxConcurrentStreams: MAX_STREAMS, maxHeaderListSize: h1.maxHeaderSize, enablePush: false },
    maxHeaderListPairs: 256,
    maxSessionMemory: MAX_SESSION_MEMORY_MIB,
    maxSessionInvalidFrames: 100,
    maxSessionRejectedStreams: 100,
    maxOutstandingPings: 10,
    maxSettings: 32,
  };
}

/**
 * An h2 session's life once accepted: no frame for `keepAliveTimeout` gets GOAWAY, as an idle
 * HTTP/1.1 keep-alive connection is closed; a GOAWAY sent or received lets the streams still open
 * finish for `h2CloseGraceMs`, then the session is destroyed (a peer that never reads its answers
 * would otherwise keep it, and what it holds, for ever); a stream with no frame either way for
 * `streamTimeoutMs` is cancelled, unless its answer has started and nothing of it waits for the
 * client (the upstream stalls: the forwarder cuts that one as the upstream's). A session Node ends for a flood (rapid reset, invalid frames,
 * refused streams, session memory) is counted. Returns how to close it (the listener's closeIdle).
 */
export function superviseSession(
  session: http2.ServerHttp2Session,
  h1: H1Options,
  bounds: ConnectionBounds | undefined,
): () => void {
  let grace: NodeJS.Timeout | null = null;
  const close = () => {
    if (session.destroyed) return;
    session.close();
    if (bounds === undefined || grace !== null) return;
    grace = setTimeout(() => {
      if (session.destroyed) return;
      bounds.onBound('h2_goaway');
      session.destroy();
    }, bounds.h2CloseGraceMs);
    grace.unref();
  };
  session.setTimeout(h1.keepAliveTimeout, close);
  session.on('goaway', close);
  session.once('close', () => {
    if (grace !== null) clearTimeout(grace);
  });
  if (bounds !== undefined) {
    session.on('error', () => bounds.onBound('h2_flood'));
    session.on('stream', (stream: http2.ServerHttp2Stream) => {
      stream.setTimeout(bounds.streamTimeoutMs, () => {
        // An answer under way with nothing waiting for the client: the upstream is the one idle,
        // and the forwarder's own wait (upstream.timeout_ms) cuts it as the upstream's, not this.
        if (stream.headersSent && stream.bufferSize === 0) return;
        bounds.onBound('send_timeout');
        stream.close(CANCEL);
      });
    });
  }
  return close;
}

/**
 * Streams open at once on one session. nginx allows 128 and Node 2^32-1; a sidecar's client
 * (an app, a balancer) keeps far fewer in flight, but clients assume 100 until our SETTINGS
 * arrive (nghttp2, Go), and streams past ours in that first burst are refused: 64 halves what a
 * session can hold waiting (about 12 KiB a stream, docs/reference/limits.md) while a burst of
 * a few dozen at connection start is served whole.
 */
const MAX_STREAMS = 64;
/**
 * Node's `maxSessionMemory` (MiB, default 10): past it new streams are refused
 * (ENHANCE_YOUR_CALM). Answers leadgate writes are small; 4 MiB leaves room for a large
 * forwarded answer being written while keeping a few hundred sessions far from the pod's limit.
 */
const MAX_SESSION_MEMORY_MIB = 4;

/** RFC 9113 §8.2.2: fields that are connection-specific in HTTP/1.1 make an h2 request malformed. */
const CONNECTION_SPECIFIC = ['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade'];

/**
 * The edge between an h2 stream and the HTTP/1.1 handler: a request with a connection-specific
 * field (or `te` other than `trailers`) is a stream error (RST_STREAM PROTOCOL_ERROR) before the
 * handler sees it (nghttp2 refuses them already; this makes the rule the listener's own, whatever
 * Node's version does); the others reach the handler with their pseudo-header fields folded into
 * what an HTTP/1.1 request carries (`:authority` as `host`, RFC 9113 §8.3.1), and the answer drops
 * the fields h2 has no place for (`connection: close` and the like). HTTP/1.1 requests on the same
 * port pass through unchanged.
 */
export function h2Edge(handler: http.RequestListener): http.RequestListener {
  return (req, res) => {
    const stream = (req as unknown as { stream?: http2.ServerHttp2Stream }).stream;
    if (req.httpVersionMajor !== 2 || stream === undefined) return handler(req, res);
    // Reset before it was served: nothing to answer, nobody to forward for.
    if (stream.destroyed) return;
    const headers = req.headers;
    const te = headers.te;
    if (
      CONNECTION_SPECIFIC.some((name) => headers[name] !== undefined) ||
      (te !== undefined && te !== 'trailers')
    ) {
      stream.close(PROTOCOL_ERROR);
      return;
    }
    foldPseudoHeaders(req);
    dropConnectionFields(res);
    answerFlagsOfStream(res, stream);
    handler(req, res);
  };
}

function foldPseudoHeaders(req: http.IncomingMessage): void {
  const headers = req.headers;
  const authority = headers[':authority'];
  // Node's compat request reads these from the pseudo-header fields: keep them as plain values
  // (and `headers`, which a forwarding engine may replace)
  Object.defineProperties(req, {
    method: { value: req.method, writable: true, configurable: true },
    url: { value: req.url, writable: true, configurable: true },
    headers: { value: headers, writable: true, configurable: true },
  });
  for (const name of Object.keys(headers)) if (name.startsWith(':')) delete headers[name];
  const raw = req.rawHeaders;
  const kept: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as string;
    if (!name.startsWith(':')) kept.push(name, raw[i + 1] as string);
  }
  if (headers.host === undefined && typeof authority === 'string') {
    headers.host = authority;
    kept.push('host', authority);
  }
  raw.splice(0, raw.length, ...kept);
}

/**
 * Node's compat response has no `destroyed`, and says `writableFinished` once its stream closed,
 * reset or not: a forwarder reading them as HTTP/1.1's would keep an upstream request (and its
 * pooled connection) waiting on a stream reset mid-answer (rapid reset pins every upstream
 * connection). Here they mean what they mean on HTTP/1.1: the stream is gone; the answer was
 * written whole.
 */
function answerFlagsOfStream(res: http.ServerResponse, stream: http2.ServerHttp2Stream): void {
  Object.defineProperties(res, {
    destroyed: { get: () => stream.destroyed, configurable: true },
    writableFinished: {
      get: () => stream.writableFinished && stream.rstCode === NO_ERROR,
      configurable: true,
    },
  });
}

function dropConnectionFields(res: http.ServerResponse): void {
  const setHeader = res.setHeader.bind(res);
  res.setHeader = (name: string, value: number | string | readonly string[]) =>
    DROPPED.has(name.toLowerCase()) ? res : setHeader(name, value);
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => http.ServerResponse;
  res.writeHead = ((status: number, ...rest: unknown[]) => {
    const last = rest.at(-1);
    if (Array.isArray(last)) {
      const kept: unknown[] = [];
      for (let i = 0; i + 1 < last.length; i += 2) {
        if (!DROPPED.has(String(last[i]).toLowerCase())) kept.push(last[i], last[i + 1]);
      }
      rest[rest.length - 1] = kept;
    } else if (last !== null && typeof last === 'object') {
      rest[rest.length - 1] = Object.fromEntries(
        Object.entries(last).filter(([name]) => !DROPPED.has(name.toLowerCase())),
      );
    }
    return writeHead(status, ...rest);
  }) as typeof res.writeHead;
}

/** Fields an HTTP/1.1 answer may carry that an h2 answer must not (RFC 9113 §8.2.2). */
const DROPPED = new Set([...CONNECTION_SPECIFIC, 'te']);

/** NGHTTP2_NO_ERROR: a stream closed normally. */
const NO_ERROR = 0;
/** NGHTTP2_CANCEL. */
const CANCEL = 8;
/** NGHTTP2_PROTOCOL_ERROR. */
const PROTOCOL_ERROR = 1;
