import type { IncomingMessage } from 'node:http';
import { GatewayError } from '../contract/errors.js';

/** The request facts the HTTP/1.1 framing rules read. */
export interface WireFacts {
  readonly httpVersionMajor: number;
  readonly httpVersionMinor: number;
  /** Names and values as received, alternating (Node's `rawHeaders`). */
  readonly rawHeaders: readonly string[];
}

// RFC 9112 §3.2 / RFC 3986 §3.2.2: reg-name or IPv4, or an IP literal in brackets; optional port.
const HOST =
  /^(?:[A-Za-z0-9._~!$&'()*+,;=-]|%[0-9A-Fa-f]{2})+(?::[0-9]{0,5})?$|^\[[0-9A-Fa-f:.]+\](?::[0-9]{0,5})?$/;

const bad = (detail: string) => new GatewayError('bad_request', detail);

/**
 * What Node's parser lets through but an HTTP/1.1 intermediary must not (RFC 9112): other
 * versions, more headers than `maxHeaderCount`, a missing, repeated or malformed Host, repeated
 * Content-Length, and any Transfer-Encoding other than exactly `chunked`. Checked before §3, so
 * nothing that could be framed or routed two ways is ever authenticated or forwarded.
 */
export function checkWire(req: WireFacts, maxHeaderCount: number): GatewayError | null {
  // HTTP/2 reaches here only through the listener's h2 edge (src/listener/h2.ts): framed by
  // nghttp2, connection-specific fields refused, `:authority` folded into Host.
  const h2 = req.httpVersionMajor === 2 && 'stream' in req;
  if (req.httpVersionMajor !== 1 && !h2) {
    return bad('only HTTP/1.0, HTTP/1.1 and HTTP/2 are spoken here');
  }
  const raw = req.rawHeaders;
  if (raw.length / 2 > maxHeaderCount) {
    return new GatewayError('headers_too_large', `the request has more than ${maxHeaderCount} headers`);
  }
  let hosts = 0;
  let host = '';
  let lengths = 0;
  let codings = 0;
  let coding = '';
  for (let i = 0; i < raw.length; i += 2) {
    const name = (raw[i] ?? '').toLowerCase();
    if (name === 'host') {
      hosts++;
      host = raw[i + 1] ?? '';
    } else if (name === 'content-length') lengths++;
    else if (name === 'transfer-encoding') {
      codings++;
      coding = raw[i + 1] ?? '';
    }
  }
  if (hosts > 1) return bad('the request has more than one Host header');
  if (hosts === 0 && req.httpVersionMinor >= 1) return bad('an HTTP/1.1 request needs a Host header');
  if (hosts === 1 && !HOST.test(host)) return bad('the Host header is not a valid host[:port]');
  if (lengths > 1) return bad('the request has more than one Content-Length header');
  if (codings > 0) {
    if (codings > 1 || coding.trim().toLowerCase() !== 'chunked') {
      return bad('Transfer-Encoding must be exactly "chunked"');
    }
    if (lengths > 0) return bad('the request has both Content-Length and Transfer-Encoding');
    if (req.httpVersionMinor === 0) return bad('HTTP/1.0 has no Transfer-Encoding');
  }
  return null;
}

/** True when the request announces a body (a length above 0, or chunks). */
export function announcesBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}
