import type { KeyObject } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { LRUCache } from 'lru-cache';
import type { ApiKey } from '../config/types.js';
import { GatewayError } from './errors.js';

export interface VerifiedToken {
  readonly leadId: string;
  /** Unix seconds. */
  readonly exp: number;
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
}

const invalid = (detail: string) => new GatewayError('invalid_lead_token', detail);

/**
 * CONTRACT §3.6, the lead token: HS256 only, signed with the secret of the key presented, with a
 * non-empty string `lead_id` and an `exp` that is in the future and no further than
 * `ttlS + maxSkewS` away. A verified token is cached until its `exp`, tied to the key that
 * verified it, so a repeat costs one map lookup.
 */
export function createLeadTokenVerifier(options: LeadTokenOptions) {
  const cache =
    options.cacheSize > 0
      ? new LRUCache<string, CachedToken>({ max: options.cacheSize, ttlAutopurge: false })
      : null;
  const maxLife = options.ttlS + options.maxSkewS;

  return function verifyLeadToken(key: ApiKey, token: string, nowS: number): VerifiedToken | GatewayError {
    const hit = cache?.get(token);
    if (hit !== undefined && hit.keySha256 === key.sha256) {
      if (hit.exp <= nowS) return new GatewayError('expired_lead_token', 'the lead token has expired');
      if (hit.exp - nowS <= maxLife) return hit;
    }
    let payload: unknown;
    try {
      payload = jwt.verify(token, key.secret, {
        algorithms: ['HS256'],
        clockTimestamp: nowS,
        clockTolerance: 0,
        ignoreNotBefore: false,
      });
    } catch (err) {
      if (err instanceof jwt.TokenExpiredError) {
        return new GatewayError('expired_lead_token', 'the lead token has expired');
      }
      return invalid('the lead token is malformed, not HS256, or not signed with this key');
    }
    if (payload === null || typeof payload !== 'object')
      return invalid('the lead token has no claims object');
    const claims = payload as Record<string, unknown>;
    const leadId = claims.lead_id;
    const exp = claims.exp;
    if (typeof leadId !== 'string' || leadId === '') return invalid('the lead token has no lead_id claim');
    if (typeof exp !== 'number' || !Number.isFinite(exp)) return invalid('the lead token has no exp claim');
    if (exp <= nowS) return new GatewayError('expired_lead_token', 'the lead token has expired');
    if (exp - nowS > maxLife) return invalid('the lead token lives longer than the allowed lifetime');
    const verified: CachedToken = { leadId, exp, keySha256: key.sha256 };
    cache?.set(token, verified, { ttl: (exp - nowS) * 1000 });
    return verified;
  };
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
): { token: string; exp: number } {
  const exp = capExp === undefined ? nowS + ttlS : Math.min(capExp, nowS + ttlS);
  const token = jwt.sign({ lead_id: leadId, iat: nowS, exp }, secret, { algorithm: 'HS256' });
  return { token, exp };
}
