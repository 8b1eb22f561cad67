import type http from 'node:http';
import type http2 from 'node:http2';
import type https from 'node:https';
import type { ListenerMetrics } from './metrics.js';
import type { ListenerName } from './settings.js';

/** The HTTP/1.1 server options a listener passes to Node (the limits of CONTRACT §7). */
export interface H1Options {
  readonly maxHeaderSize: number;
  readonly headersTimeout: number;
  readonly requestTimeout: number;
  readonly keepAliveTimeout: number;
  readonly connectionsCheckingInterval: number;
}

/** A server whose HTTP/1.1 events the caller wires (limits, clientError, CONNECT). */
export type HttpServer = http.Server | https.Server | http2.Http2SecureServer;

export interface ListenerDeps {
  readonly name: ListenerName;
  readonly handler: http.RequestListener;
  readonly h1: H1Options;
  /** Wires the server's events (limits, clientError, CONNECT, checkContinue with `handler`). */
  readonly configure?: (server: HttpServer, handler: http.RequestListener) => void;
  readonly metrics: ListenerMetrics;
  /** Calls back when any of the files changes (the config watcher, with its `..data` handling). */
  readonly watch: (files: readonly string[], onChange: () => void) => { close(): void };
  readonly log: (level: 'info' | 'error', fields: Record<string, unknown>, message: string) => void;
  /** The connection bounds of `limits:` (docs/reference/limits.md); none when absent (admin). */
  readonly bounds?: ConnectionBounds;
}

/** What the listener cuts, as `leadgate_connection_bounds_total{bound}` counts it. */
export type ListenerBound =
  | 'handshake_timeout'
  | 'max_connections'
  | 'send_timeout'
  | 'h2_flood'
  | 'h2_goaway';

export interface ConnectionBounds {
  /** Connections open at once on this listener (in this process); more are closed on accept. */
  readonly maxConnections: number;
  /** How long an h2 session that got or sent GOAWAY may take to finish its streams before it is destroyed. */
  readonly h2CloseGraceMs: number;
  /** An h2 stream with no frame either way for this long is cancelled (unless only the upstream is idle: h2.ts). */
  readonly streamTimeoutMs: number;
  readonly onBound: (bound: ListenerBound) => void;
}
