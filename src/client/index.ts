/**
 * What a merchant's Node backend imports (`leadgate/client`) to make lead credentials:
 * the digest of spec §4 (Path B) and the lead token of spec §5.4 (Path A).
 * Both need the signing secret, so both run on a server only. They are the gateway's own
 * functions, so a merchant's credentials and the gateway's checks cannot drift apart.
 */
import { computeLeadDigest } from '../auth/lead-digest.js';
import { signLeadToken as mintLeadToken } from '../auth/lead-token.js';

/** Hex HMAC-SHA256 of `<customerId>:<timestamp>` keyed with the signing secret. */
export function leadDigest(secret: string, customerId: string, timestamp: number): string {
  return computeLeadDigest(secret, customerId, timestamp).toString('hex');
}

export interface SignOptions {
  /** Lifetime in seconds; the gateway refuses tokens that live longer than its `ttl_s` (3600). */
  readonly ttlS?: number;
  /** Unix seconds; defaults to now. */
  readonly now?: number;
}

/** An HS256 lead token `{ lead_id, iat, exp }`. */
export function signLeadToken(secret: string, leadId: string, options: SignOptions = {}): string {
  const now = options.now ?? Math.floor(Date.now() / 1000);
  return mintLeadToken(secret, leadId, now, options.ttlS ?? 3600).token;
}
