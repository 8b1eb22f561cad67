import type { ApiKey } from '../config/types.js';
import { GatewayError } from '../contract/errors.js';
import { type Address, type IpMatcher, parseAddress } from '../net/ip.js';

/**
 * CONTRACT §3.3, the client address: the peer, unless the peer is a trusted proxy; then the
 * right-most address of X-Forwarded-For that is not itself a trusted proxy (the left-most when all
 * are trusted). A malformed entry met on that walk makes the address unknown (null): it can never
 * match an allow-list, so a key with `origin_ips` is refused.
 */
export type ClientIpResolver = (
  peer: string | undefined,
  forwardedFor: string | string[] | undefined,
) => Address | null;

export function createClientIpResolver(trusted: IpMatcher): ClientIpResolver {
  return (peer, forwardedFor) => resolveClientIp(trusted, peer, forwardedFor);
}

/** The client address for `peer` and its X-Forwarded-For under `trusted` (see above). */
export function resolveClientIp(
  trusted: IpMatcher,
  peer: string | undefined,
  forwardedFor: string | string[] | undefined,
): Address | null {
  const peerAddr = peer === undefined ? null : parseAddress(peer);
  if (peerAddr === null || trusted.size === 0 || !trusted.matches(peerAddr)) return peerAddr;
  if (forwardedFor === undefined) return peerAddr;
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',');
  let last: Address = peerAddr;
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = (hops[i] ?? '').trim();
    if (hop === '' && hops.length === 1) return peerAddr;
    const addr = parseAddress(hop);
    if (addr === null) return null;
    if (!trusted.matches(addr)) return addr;
    last = addr;
  }
  return last;
}

/** CONTRACT §3.3, the check: when the key has `origin_ips`, the client address must be in them. */
export function checkOriginIp(key: ApiKey, client: Address | null): GatewayError | null {
  if (key.origins === null) return null;
  if (client !== null && key.origins.matches(client)) return null;
  return new GatewayError(
    'origin_not_allowed',
    'requests with this API key are not allowed from this address',
  );
}
