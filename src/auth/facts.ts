import type { IncomingHttpHeaders } from 'node:http';
import { type Address, type IpMatcher, parseAddress } from '../net/ip.js';
import { resolveClientIp } from './client-ip.js';

const UNRESOLVED = Symbol('leadgate.unresolved');

/**
 * What every step reads of one request: plain facts, no sockets. Made once per request by the
 * entry step (http/entry.ts); what needs working out (the client address of CONTRACT §3.3, whether
 * the peer is a trusted proxy) is worked out on its first read and kept, so the pipeline, the
 * admission and the forwarder share one answer.
 */
export class RequestFacts {
  private client: Address | null | typeof UNRESOLVED = UNRESOLVED;
  private peerAddr: Address | null | typeof UNRESOLVED = UNRESOLVED;

  constructor(
    readonly method: string,
    readonly url: string,
    readonly headers: IncomingHttpHeaders,
    /** The socket's address (the PROXY protocol's source when the listener speaks it). */
    readonly peer: string | undefined,
    /** Unix seconds, the gateway clock. */
    readonly nowS: number,
    /** `trusted_proxies`, from the config the request is served under. */
    private readonly trusted: IpMatcher,
  ) {}

  /** CONTRACT §3.3: the client address (client-ip.ts), or null when it is unknown. */
  clientAddress(): Address | null {
    if (this.client === UNRESOLVED) {
      this.client = resolveClientIp(this.trusted, this.peer, this.headers['x-forwarded-for']);
    }
    return this.client;
  }

  /** The peer is a trusted proxy: its X-Forwarded-For chain and proto are kept and extended. */
  peerTrusted(): boolean {
    if (this.trusted.size === 0) return false;
    if (this.peerAddr === UNRESOLVED) {
      this.peerAddr = this.peer ? parseAddress(this.peer) : null;
    }
    return this.peerAddr !== null && this.trusted.matches(this.peerAddr);
  }
}
