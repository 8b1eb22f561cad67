/**
 * What a merchant's Node backend imports (`leadgate/client`) to make lead credentials:
 * the digest of spec §4 (Path B) and the lead token of spec §5.4 (Path A).
 * Both need the signing secret, so both run on a server only.
 */
import { createHmac } from 'node:crypto';
import jwt from 'jsonwebtoken';

/** Hex HMAC-SHA256 of `<customerId>:<timestamp>` keyed with the signing secret. */
export function leadDigest(secret: string, customerId: string, timestamp: number): string {
  return createHmac('sha256', secret).update(`${customerId}:${timestamp}`, 'utf8').digest('hex');
}

export interface SignOptions {
  /** Lifetime in seconds; the gateway refuses tokens that live longer than its `ttl_s` (3600). */
  readonly ttlS?: number;
  /** Unix seconds; defaults to now. */
  readonly now?: number;
}

/** An HS256 lead token `{ lead_id, iat, exp }`. */
export function signLeadToken(secret: string, leadId: string, options: SignOptions = {}): string {
  const iat = options.now ?? Math.floor(Date.now() / 1000);
  const exp = iat + (options.ttlS ?? 3600);
  return jwt.sign({ lead_id: leadId, iat, exp }, secret, { algorithm: 'HS256' });
}
