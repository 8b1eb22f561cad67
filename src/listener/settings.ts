import type { IpMatcher } from '../net/ip.js';

/** A listener's TLS, as the config keeps it: absolute paths, read at start and on change. */
export interface TlsSettings {
  readonly certFile: string;
  readonly keyFile: string;
  readonly clientCaFile: string | null;
  readonly minVersion: 'TLSv1.2' | 'TLSv1.3';
  readonly http2: boolean;
}

export interface ProxyProtocolSettings {
  /** The balancers whose PROXY headers are believed. */
  readonly from: IpMatcher;
  /** `from` as written (for the restart check). */
  readonly fromText: readonly string[];
  readonly headerTimeoutMs: number;
}

/** One listener (`listen`, `forward_auth.listen`, `admin`). */
export interface ListenerSettings {
  readonly host: string;
  readonly port: number;
  readonly tls: TlsSettings | null;
  readonly proxyProtocol: ProxyProtocolSettings | null;
}

/** The listeners' names, as metrics and logs label them. */
export type ListenerName = 'api' | 'forward_auth' | 'admin';
