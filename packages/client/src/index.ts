/**
 * What a merchant's Node backend imports (`@leadgate/client`, also as `leadgate/client`) to make lead credentials: the
 * digest of a Path B lookup and the lead token of Path A. Both need the signing secret, so both
 * run on a server only. No dependency beyond `node:crypto`: installing the package for these
 * two functions pulls in nothing of the gateway. The test suite checks both against the
 * gateway's own verifier, `jsonwebtoken`, and vectors computed with Python.
 */
import { createHmac } from 'node:crypto';

/** Thrown for a missing or empty secret or id: a clear message, never the secret itself. */
export class LeadgateClientError extends Error {
  override readonly name = 'LeadgateClientError';
}

function requireText(value: unknown, what: string): string {
  if (typeof value !== 'string' || value === '') {
    throw new LeadgateClientError(
      what === 'secret'
        ? "the signing secret is missing: pass the API key's signing secret (e.g. from LEADGATE_SIGNING_SECRET)"
        : `${what} must be a non-empty string`,
    );
  }
  return value;
}

/** Hex HMAC-SHA256 of `<customerId>:<timestamp>` keyed with the signing secret (Path B). */
export function leadDigest(secret: string, customerId: string, timestamp: number): string {
  requireText(secret, 'secret');
  requireText(customerId, 'customerId');
  if (!Number.isInteger(timestamp) || timestamp < 0) {
    throw new LeadgateClientError('timestamp must be whole unix seconds');
  }
  return createHmac('sha256', secret).update(`${customerId}:${timestamp}`, 'utf8').digest('hex');
}

export interface SignOptions {
  /** Lifetime in seconds; the gateway refuses tokens that live longer than its `ttl_s` (3600). */
  readonly ttlS?: number;
  /** Unix seconds; defaults to now. */
  readonly now?: number;
  /** Key id for the JWT header, where the gateway's key has more than one signing secret. */
  readonly kid?: string;
}

const base64url = (text: string) => Buffer.from(text, 'utf8').toString('base64url');

/** An HS256 lead token `{ lead_id, iat, exp }` (Path A), as `jsonwebtoken` would sign it. */
export function signLeadToken(secret: string, leadId: string, options: SignOptions = {}): string {
  requireText(secret, 'secret');
  requireText(leadId, 'leadId');
  const iat = options.now ?? Math.floor(Date.now() / 1000);
  const ttl = options.ttlS ?? 3600;
  if (!Number.isInteger(ttl) || ttl <= 0)
    throw new LeadgateClientError('ttlS must be a whole number of seconds');
  const header =
    options.kid === undefined ? { alg: 'HS256', typ: 'JWT' } : { alg: 'HS256', typ: 'JWT', kid: options.kid };
  const input = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify({ lead_id: leadId, iat, exp: iat + ttl }))}`;
  return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
}
