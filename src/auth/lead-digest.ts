import { createHmac, type KeyObject, timingSafeEqual } from 'node:crypto';
import { type ApiKey, isLive } from '../config/types.js';
import { GatewayError } from '../contract/errors.js';

export interface DigestInput {
  readonly digest: string;
  readonly timestamp: string | string[] | undefined;
  readonly customerId: string | null;
}

export interface DigestOptions {
  readonly maxSkewS: number;
}

const HEX_64 = /^[0-9a-fA-F]{64}$/;
const WHOLE_SECONDS = /^[0-9]{1,11}$/;

/** Spec §4 rule 2: hex HMAC-SHA256 over `<customer_id>:<unix_timestamp>`, keyed with the signing secret. */
export function computeLeadDigest(
  secret: KeyObject | string,
  customerId: string,
  timestamp: number | string,
): Buffer {
  return createHmac('sha256', secret).update(`${customerId}:${timestamp}`, 'utf8').digest();
}

/**
 * CONTRACT §3.6, the lead digest: `x-timestamp` is whole unix seconds within `maxSkewS` of now,
 * `customer_id` is given, and the digest matches, compared in constant time over equal-length
 * buffers. Single use is checked after §3, in admission/single-use.ts.
 */
export function createLeadDigestVerifier(options: DigestOptions) {
  return function verifyLeadDigest(key: ApiKey, input: DigestInput, nowS: number): GatewayError | null {
    const ts = input.timestamp;
    if (ts === undefined || ts === '') {
      return new GatewayError(
        'invalid_timestamp',
        'x-timestamp (unix seconds) is required with x-leaddigest',
      );
    }
    if (typeof ts !== 'string' || !WHOLE_SECONDS.test(ts)) {
      const detail =
        typeof ts === 'string' && /^[0-9]{12,}$/.test(ts)
          ? 'x-timestamp must be whole unix seconds, not milliseconds'
          : 'x-timestamp must be whole unix seconds';
      return new GatewayError('invalid_timestamp', detail);
    }
    if (input.customerId === null || input.customerId === '') {
      return new GatewayError(
        'missing_customer_id',
        'exactly one customer_id query parameter is required with a digest',
      );
    }
    const tsS = Number(ts);
    if (Math.abs(nowS - tsS) > options.maxSkewS) {
      return new GatewayError(
        'stale_timestamp',
        `x-timestamp is more than ${options.maxSkewS} seconds from the gateway clock`,
      );
    }
    if (!HEX_64.test(input.digest))
      return new GatewayError('invalid_digest', 'x-leaddigest must be 64 hex characters');
    const presented = Buffer.from(input.digest, 'hex');
    if (!matchesALiveSecret(key, presented, input.customerId, ts, nowS)) {
      return new GatewayError('invalid_digest', 'the lead digest does not match');
    }
    return null;
  };
}

/** The digest against every live secret of the key, each compared in constant time. */
function matchesALiveSecret(
  key: ApiKey,
  presented: Buffer,
  customerId: string,
  ts: string,
  nowS: number,
): boolean {
  let matched = false;
  for (const secret of key.verifiers) {
    if (!isLive(secret, nowS)) continue;
    const expected = computeLeadDigest(secret.key, customerId, ts);
    if (presented.length === expected.length && timingSafeEqual(presented, expected)) matched = true;
  }
  return matched;
}
