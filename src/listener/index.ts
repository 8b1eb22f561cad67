import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import net, { type AddressInfo, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { acceptProxied, assignPeer, handedPeer } from './accept.js';
import { h2Edge, h2Limits, superviseSession } from './h2.js';
import type { ListenerSettings } from './settings.js';
import { type CertificateWatch, watchCertificate } from './tls-reload.js';
import type { HttpServer, ListenerDeps } from './types.js';

export type { ListenerMetrics } from './metrics.js';
export { createListenerMetrics } from './metrics.js';
export { adminListenerSchema, listenerMeanings, listenerSchema, listenerSettingsOf } from './schema.js';
export type { ListenerName, ListenerSettings, ProxyProtocolSettings, TlsSettings } from './settings.js';
export { certificateExpiryWarning, EXPIRY_WARNING_DAYS, loadPair } from './tls.js';
export type { ConnectionBounds, H1Options, HttpServer, ListenerBound, ListenerDeps } from './types.js';

/** One listening endpoint of CONTRACT §11: plain or TLS (h2 by ALPN), PROXY protocol in front. */
export interface Listener {
  readonly port: number;
  /** Stop accepting; resolves once every connection has gone. */
  stopAccepting(): Promise<void>;
  /** Closes connections that have no request in flight (h2: a GOAWAY, streams finish). */
  closeIdle(): void;
  /** Closes every connection at once and stops the certificate watch. */
  close(): Promise<void>;
}

/** Creates and binds a listener; rejects (closing what it opened) when it cannot. */
export async function openListener(settings: ListenerSettings, deps: ListenerDeps): Promise<Listener> {
  const { name, metrics } = deps;
  const tls = settings.tls;
  const cert: CertificateWatch | null = tls === null ? null : watchCertificate(name, tls, deps);
  const sockets = new Set<Socket | Duplex>();
  const sessions = new Map<http2.ServerHttp2Session, () => void>();
  const server = createServer(settings, deps, cert);
  const track = (socket: Socket | Duplex) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  };
  if (tls === null) {
    server.on('connection', (socket: Socket) => {
      track(socket);
      metrics.connections.inc({ listener: name, protocol: 'http1', tls: 'false' });
    });
  } else {
    server.prependListener('secureConnection', (socket: TLSSocket) => {
      const peer = handedPeer.getStore();
      if (peer !== undefined) assignPeer(socket, peer);
      track(socket);
      const protocol = socket.alpnProtocol === 'h2' ? 'h2' : 'http1';
      metrics.connections.inc({ listener: name, protocol, tls: 'true' });
    });
  }
  if (tls?.http2 === true) {
    server.on('session', (session: http2.ServerHttp2Session) => {
      sessions.set(session, superviseSession(session, deps.h1, deps.bounds));
      session.once('close', () => sessions.delete(session));
    });
  }
  const proxy = settings.proxyProtocol;
  const front: net.Server =
    proxy === null
      ? server
      : net.createServer((socket) => {
          track(socket);
          acceptProxied(
            socket,
            proxy,
            tls !== null,
            (result) => metrics.proxyProtocol.inc({ listener: name, result }),
            (stream, peer) => handedPeer.run(peer, () => server.emit('connection', stream)),
          );
        });
  const bounds = deps.bounds;
  if (bounds !== undefined) {
    // Node closes a connection accepted past the cap at once ('drop'); behind a PROXY front the
    // front is what accepts.
    front.maxConnections = bounds.maxConnections;
    front.on('drop', () => bounds.onBound('max_connections'));
    if (tls !== null) {
      server.on('tlsClientError', (err: NodeJS.ErrnoException) => {
        if (err.code === 'ERR_TLS_HANDSHAKE_TIMEOUT') bounds.onBound('handshake_timeout');
      });
    }
  }
  try {
    await bind(front, settings.host, settings.port);
  } catch (err) {
    cert?.stop();
    await new Promise((resolve) => server.close(resolve));
    throw err;
  }
  // The server behind a PROXY front is handed connections and never listens itself; Node starts
  // its HTTP/1.1 connection checks (headersTimeout, requestTimeout: lib/_http_server.js
  // setupConnectionsTracking) on 'listening', so without this no slow client would ever be cut.
  if (front !== server) server.emit('listening');
  const closed = new Promise<void>((resolve) => front.once('close', () => resolve()));
  const stopAccepting = () => {
    if (front.listening) {
      front.close();
      // the server behind a PROXY front never listened: close() still stops its timers
      if (front !== server) server.close(() => {});
    }
    return closed;
  };
  return {
    port: (front.address() as AddressInfo).port,
    stopAccepting,
    closeIdle() {
      if ('closeIdleConnections' in server) server.closeIdleConnections();
      for (const close of sessions.values()) close();
    },
    async close() {
      cert?.stop();
      void stopAccepting();
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

function createServer(
  settings: ListenerSettings,
  deps: ListenerDeps,
  cert: CertificateWatch | null,
): HttpServer {
  const tls = settings.tls;
  let server: HttpServer;
  let handler = deps.handler;
  if (tls === null || cert === null) {
    server = http.createServer(deps.h1, handler);
  } else {
    const secure = {
      ...cert.initial.options,
      requestCert: tls.clientCaFile !== null,
      rejectUnauthorized: tls.clientCaFile !== null,
      // a TLS connection's handshake is part of its headers: the same bound (Node's default 120 s)
      handshakeTimeout: deps.h1.headersTimeout,
    };
    let secureServer: https.Server | http2.Http2SecureServer;
    if (tls.http2) {
      handler = h2Edge(deps.handler);
      secureServer = http2.createSecureServer(
        { ...secure, ...deps.h1, ...h2Limits(deps.h1), allowHTTP1: true, ALPNProtocols: ['h2', 'http/1.1'] },
        handler as unknown as (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void,
      );
      // Node 22's http2 server takes none of the HTTP/1.1 options it serves `allowHTTP1` with
      // (headersTimeout 60 s, requestTimeout 300 s, its own checking interval): set them on it, as
      // Node 26 does from the options, so slow HTTP/1.1 clients meet the same bounds on every line.
      Object.assign(secureServer, deps.h1);
    } else {
      secureServer = https.createServer({ ...secure, ...deps.h1, ALPNProtocols: ['http/1.1'] }, handler);
    }
    cert.attach(secureServer);
    server = secureServer;
  }
  deps.configure?.(server, handler);
  return server;
}

function bind(server: net.Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
