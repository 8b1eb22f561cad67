import { AsyncLocalStorage } from 'node:async_hooks';
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { parseAddress } from '../net/ip.js';
import type { ProxyResult } from './metrics.js';
import { parseProxyHeader, startsWithSignature } from './proxy-header.js';
import type { ProxyProtocolSettings } from './settings.js';

/** The peer a connection's requests see: the socket's own, or a believed PROXY header's source. */
export interface Peer {
  readonly address: string;
  readonly port: number;
  readonly family: string;
}

/**
 * The peer of the connection being handed to a TLS server: its TLSSocket is made inside that
 * call, so its handshake (and `secureConnection`) runs in this context.
 */
export const handedPeer = new AsyncLocalStorage<Peer>();

/** Makes `socket` report `peer` as its remote end, for every reader of `remoteAddress`. */
export function assignPeer(socket: object, peer: Peer): void {
  Object.defineProperties(socket, {
    remoteAddress: { value: peer.address, configurable: true },
    remotePort: { value: peer.port, configurable: true },
    remoteFamily: { value: peer.family, configurable: true },
  });
}

/**
 * CONTRACT §11: reads a PROXY v1/v2 header at the start of a connection on a listener with
 * `proxy_protocol`. A header from a peer in `from` makes its source the peer; from any other
 * peer, or malformed, truncated or late, the connection is closed without an answer. A
 * connection that does not start with a header is handed on as it is.
 *
 * `hand` gets the stream to serve (the socket itself, or for TLS with bytes already read past
 * the header a stream that replays them first) and the peer.
 */
export function acceptProxied(
  socket: Socket,
  settings: ProxyProtocolSettings,
  tls: boolean,
  count: (result: ProxyResult) => void,
  hand: (stream: Socket | Duplex, peer: Peer) => void,
): void {
  // A connection already gone when it is accepted has no address left to judge (HAProxy's health
  // checks connect, send a LOCAL header and close at once): it is neither refused nor counted.
  if (socket.remoteAddress === undefined) {
    socket.destroy();
    return;
  }
  const real: Peer = {
    address: socket.remoteAddress ?? '',
    port: socket.remotePort ?? 0,
    family: socket.remoteFamily ?? '',
  };
  const realAddr = parseAddress(real.address);
  const believed = realAddr !== null && settings.from.matches(realAddr);
  let buf: Buffer = Buffer.alloc(0);
  const fail = (result: ProxyResult) => {
    cleanup();
    count(result);
    socket.destroy();
  };
  const timer = setTimeout(() => fail('timeout'), settings.headerTimeoutMs);
  const onData = (chunk: Buffer) => {
    buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
    // A header from a peer not believed is refused once its signature is seen, not at the timeout.
    if (!believed && startsWithSignature(buf)) return fail('refused');
    const header = parseProxyHeader(buf);
    if (header.kind === 'more') return;
    if (header.kind === 'malformed') return fail('malformed');
    if (header.kind !== 'none' && !believed) return fail('refused');
    cleanup();
    let peer = real;
    let rest = buf;
    if (header.kind === 'local') {
      count('local');
      rest = buf.subarray(header.length);
    } else if (header.kind === 'proxy') {
      count('ok');
      peer = { address: header.address, port: header.port, family: header.family };
      rest = buf.subarray(header.length);
    }
    socket.pause();
    if (rest.length > 0) socket.unshift(rest);
    // A TLS server reads a plain socket's native handle, past the bytes put back: give it a
    // stream that replays them first.
    const stream = tls && rest.length > 0 ? Duplex.from({ readable: socket, writable: socket }) : socket;
    if (stream !== socket) socket.on('close', () => stream.destroy());
    assignPeer(socket, peer);
    hand(stream, peer);
    if (stream === socket) socket.resume();
  };
  // Closed before a whole header: truncated. Closed before any byte (a TCP health check): not counted.
  const onEnd = () => {
    if (buf.length > 0) return fail('malformed');
    cleanup();
    socket.destroy();
  };
  const cleanup = () => {
    clearTimeout(timer);
    socket.off('data', onData);
    socket.off('end', onEnd);
  };
  socket.on('data', onData);
  socket.once('end', onEnd);
  socket.on('error', () => socket.destroy());
}
