import type { KeyObject } from 'node:crypto';
import type { IpMatcher } from '../net/ip.js';
import type { RawKey } from './schema.js';

/** An API key: as validated (plain data, crosses to another thread) and as built for the hot path. */

export type AccessType = 'READ' | 'WRITE';
export type Purpose = 'SERVER' | 'STOREFRONT';

export interface ApiKey {
  readonly name: string;
  /** Lowercase hex of sha256(key): the only form of the key leadgate keeps. */
  readonly sha256: string;
  readonly access: AccessType;
  readonly purpose: Purpose | null;
  /** The secret that mints, as a KeyObject made once (HMAC and HS256 both take it). */
  readonly secret: KeyObject;
  /** Its kid, put in the header of minted tokens (keys with `signing_secrets`), or null. */
  readonly kid: string | null;
  /**
   * Every secret that verifies, the minting one first. With `signing_secret`: that one, kid null.
   * With `signing_secrets`: each entry, dead from its `verify_until` on.
   */
  readonly verifiers: readonly SigningSecret[];
  readonly origins: IpMatcher | null;
  readonly corsOrigins: ReadonlySet<string> | null;
  /** True for READ + STOREFRONT: a lead credential is needed on every endpoint. */
  readonly needsLead: boolean;
  /** Unix seconds from which the key is refused (`expires_at`), or null. */
  readonly expiresAtS: number | null;
}

export interface SigningSecret {
  readonly kid: string | null;
  readonly key: KeyObject;
  /** Unix seconds from which this secret verifies nothing, or null. */
  readonly verifyUntilS: number | null;
}

/** True while `secret` verifies. */
export function isLive(secret: SigningSecret, nowS: number): boolean {
  return secret.verifyUntilS === null || nowS < secret.verifyUntilS;
}

/** A key, validated, with what its build needs: plain data, so it crosses to another thread. */
export interface RotatedSecret {
  readonly kid: string;
  readonly secret: string;
  readonly verifyUntilS: number | null;
}

export interface ResolvedKey {
  readonly raw: RawKey;
  /** Lowercase hex of sha256(key). */
  readonly sha256: string;
  /** The secret that mints. */
  readonly secret: string;
  /** With `signing_secrets`: every entry, the minting one first; null with `signing_secret`. */
  readonly rotation: readonly RotatedSecret[] | null;
  /** `expires_at` as unix seconds, or null. */
  readonly expiresAtS: number | null;
}
