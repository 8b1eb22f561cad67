import type { KeyObject } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { LRUCache } from 'lru-cache';
import { type ApiKey, isLive, type SigningSecret } from '../config/types.js';
import { GatewayError } from '../contract/errors.js';
import { isValidLeadId, LEAD_ID_RULE } from '../contract/lead-id.js';

export interface VerifiedToken {
  readonly leadId: string;
  /** Unix seconds. */
  readonly exp: number;
  /** Unix seconds: its `iat`, or (none) `exp − ttl_s`, the moment a revocation compares with. */
  readonly iat: number;
}

export interface LeadTokenOptions {
  /** The longest a token may still live, from now: `lead_token.ttl_s`. */
  readonly ttlS: number;
  /** Slack for the signer's clock on that limit; never applied to `exp` itself. */
  readonly maxSkewS: number;
  /** Verified tokens kept, by token; 0 turns the cache off. */
  readonly cacheSize: number;
}

interface CachedToken extends VerifiedToken {
  readonly keySha256: string;
  /** The verifying secret's `verify_until`: past it, the cached verification no longer counts. */
  readonly verifyUntilS: number | null;
}

const invalid = (detail: string) => new GatewayError('invalid_lead_token', detail);

/**
 * CONTRACT §3.6, the lead token: HS256 only, signed with the secret of the key presented, with a
 * non-empty string `lead_id` and an `exp` that is in the future and no further than
 * `ttlS + maxSkewS` away. A verified token is cached until its `exp`, tied to the key that
 * verified it, so a repeat costs one map lookup.
 */
export function createLeadTokenVerifier(options: LeadTokenOptions) {
  // No ttl: a hit past its `exp` is answered as expired below, and `max` bounds the entries.
  const cache = options.cacheSize > 0 ? new LRUCache<string, CachedToken>({ max: options.cacheSize }) : null;
  const maxLife = options.ttlS + options.maxSkewS;

  return function verifyLeadToken(key: ApiKey, token: string, nowS: number): VerifiedToken | GatewayError {
    const hit = cache?.get(token);
    if (
      hit !== undefined &&
      hit.keySha256 === key.sha256 &&
      (hit.verifyUntilS === null || nowS < hit.verifyUntilS)
    ) {
      if (hit.exp <= nowS) return new GatewayError('expired_lead_token', 'the lead token has expired');
      if (hit.exp - nowS <= maxLife) return hit;
    }
    const secret = secretFor(key, token, nowS);
    if (secret instanceof GatewayError) return secret;
    let decoded: jwt.Jwt;
    try {
      // exp is checked here (expired at `exp`, no tolerance); nbf and iat below, with the skew.
      decoded = jwt.verify(token, secret.key, {
        algorithms: ['HS256'],
        clockTimestamp: nowS,
        clockTolerance: 0,
        ignoreNotBefore: true,
        complete: true,
      });
    } catch (err) {
      if (err instanceof jwt.TokenExpiredError) {
        return new GatewayError('expired_lead_token', 'the lead token has expired');
      }
      return invalid('the lead token is malformed, not HS256, or not signed with this key');
    }
    const refusal = checkClaims(decoded, nowS, options.maxSkewS, maxLife);
    if (refusal !== null) return refusal;
    const claims = decoded.payload as Record<string, unknown>;
    const leadId = claims.lead_id as string;
    const exp = claims.exp as number;
    const iat = typeof claims.iat === 'number' ? claims.iat : exp - options.ttlS;
    const verified: CachedToken = {
      leadId,
      exp,
      iat,
      keySha256: key.sha256,
      verifyUntilS: secret.verifyUntilS,
    };
    cache?.set(token, verified);
    return verified;
  };
}

/**
 * The claim checks after the signature, in order: no header parameter we would have to
 * understand (`crit`, `b64`: RFC 7515 §4.1.11, RFC 7797), a valid `lead_id`, an `exp` in the
 * future and no further than `maxLife`, and no `iat` or `nbf` more than the skew ahead.
 */
function checkClaims(decoded: jwt.Jwt, nowS: number, skewS: number, maxLife: number): GatewayError | null {
  const header = decoded.header as unknown as Record<string, unknown>;
  if ('crit' in header || 'b64' in header) {
    return invalid('the lead token has a header parameter leadgate does not accept (crit or b64)');
  }
  const payload = decoded.payload;
  if (payload === null || typeof payload !== 'object') return invalid('the lead token has no claims object');
  const { lead_id: leadId, exp, iat, nbf } = payload as Record<string, unknown>;
  if (leadId === undefined || leadId === '') return invalid('the lead token has no lead_id claim');
  if (!isValidLeadId(leadId)) return invalid(`the lead token's lead_id is not valid: ${LEAD_ID_RULE}`);
  // jwt.verify refused an exp at or before now (and -Infinity); +Infinity fails the lifetime limit.
  if (typeof exp !== 'number') return invalid('the lead token has no exp claim');
  if (exp - nowS > maxLife) return invalid('the lead token lives longer than the allowed lifetime');
  for (const [name, value] of [
    ['iat', iat],
    ['nbf', nbf],
  ] as const) {
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isFinite(value))
      return invalid(`the lead token's ${name} is not a number`);
    if (value > nowS + skewS) return invalid(`the lead token's ${name} lies in the future`);
  }
  return null;
}

/**
 * Signs `{ lead_id, iat, exp }` with HS256 (CONTRACT §4). `exp` is `now + ttlS`, lowered to
 * `capExp` when given: a token minted from another token never outlives it.
 */
export function signLeadToken(
  secret: KeyObject | string,
  leadId: string,
  nowS: number,
  ttlS: number,
  capExp?: number,
  kid: string | null = null,
): { token: string; exp: number } {
  const exp = capExp === undefined ? nowS + ttlS : Math.min(capExp, nowS + ttlS);
  const options: jwt.SignOptions = kid === null ? { algorithm: 'HS256' } : { algorithm: 'HS256', keyid: kid };
  const token = jwt.sign({ lead_id: leadId, iat: nowS, exp }, secret, options);
  return { token, exp };
}

/**
 * The secret a token is checked with. A key with one `signing_secret` has one, whatever `kid` the
 * token names. With `signing_secrets`, `kid` is untrusted input (RFC 8725 §3.10): it only selects,
 * by exact match, one of the key's own live secrets; a token without `kid` is accepted only where
 * the key has a single secret.
 */
export function secretFor(key: ApiKey, token: string, nowS: number): SigningSecret | GatewayError {
  const only = key.verifiers[0];
  if (key.kid === null && only !== undefined) return only;
  const kid = (jwt.decode(token, { complete: true })?.header as { kid?: unknown } | undefined)?.kid;
  if (kid === undefined) {
    if (key.verifiers.length === 1 && only !== undefined && isLive(only, nowS)) return only;
    return invalid('the lead token names no kid, and this key has more than one signing secret');
  }
  const found = key.verifiers.find((s) => s.kid === kid);
  if (found === undefined || !isLive(found, nowS)) {
    return invalid('the lead token names a kid that is not a live secret of this key');
  }
  return found;
}
