import { hash as cryptoHash, type KeyObject } from 'node:crypto';
import type { IpMatcher } from '../net/ip.js';
import { DigestIndex, digestOfHex } from '../util/digest-index.js';
import type { Path, ProblemList } from './problems.js';
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

export interface KeyContext {
  readonly problems: ProblemList;
  readonly warnings: ProblemList;
  readonly readNamed: (path: Path, name: string) => string | null;
  /** The clock the expiry warnings are judged by, read once per load. */
  readonly nowS: number;
}

/**
 * The keys as validated: each value's sha256 (a repeated value is a problem), its secret read (from
 * a file, or each of a rotation's), and what deserves a warning (weak, expiring, dead secrets).
 */
export function resolveKeys(rawKeys: readonly RawKey[], ctx: KeyContext): ResolvedKey[] {
  const out: ResolvedKey[] = [];
  const values = new DigestIndex(rawKeys.length);
  /** Per value in `values`: the name of the key that has it first. */
  const owners: string[] = [];
  rawKeys.forEach((raw, i) => {
    const at = (...rest: Array<string | number>): Path => ['keys', i, ...rest];
    const sha256 =
      raw.key !== undefined ? cryptoHash('sha256', raw.key, 'hex') : (raw.key_sha256 ?? '').toLowerCase();
    const twin = values.add(digestOfHex(sha256));
    if (twin !== -1) {
      ctx.problems.add(
        at(raw.key !== undefined ? 'key' : 'key_sha256'),
        `key "${raw.name}" has the same value as key "${owners[twin]}"`,
      );
    }
    // the first of a value is the one named, as in the list's own check (schema.ts)
    else owners.push(raw.name);
    let secret = raw.signing_secret ?? null;
    if (raw.signing_secret_file !== undefined) {
      secret = readSecretFile(ctx, at('signing_secret_file'), raw.signing_secret_file);
    }
    const rotation = raw.signing_secrets === undefined ? null : resolveRotation(raw.signing_secrets, at, ctx);
    if (raw.signing_secrets !== undefined) secret = rotation?.[0]?.secret ?? null;
    const expiresAt = raw.expires_at === undefined ? null : unixSeconds(raw.expires_at);
    if (expiresAt !== null) {
      const soon = expiryWarning(expiresAt, ctx.nowS);
      if (soon !== null) ctx.warnings.add(at('expires_at'), soon);
    }
    if (secret === null) return;
    const weak = rotation === null ? weakSecret(secret) : null;
    if (weak !== null)
      ctx.warnings.add(at(raw.signing_secret_file ? 'signing_secret_file' : 'signing_secret'), weak);
    out.push({ raw, sha256, secret, rotation, expiresAtS: expiresAt });
  });
  return out;
}

function readSecretFile(ctx: KeyContext, path: Path, file: string): string | null {
  const content = ctx.readNamed(path, file);
  const secret = content === null ? null : content.replace(/\r?\n$/, '');
  if (secret !== null && secret.length < 16) {
    ctx.problems.add(path, 'a signing secret must have at least 16 characters');
    return null;
  }
  return secret;
}

/** `signing_secrets`: each secret read, weak or dead ones warned about; null when one is missing. */
function resolveRotation(
  entries: NonNullable<RawKey['signing_secrets']>,
  at: (...rest: Array<string | number>) => Path,
  ctx: KeyContext,
): RotatedSecret[] | null {
  const out: RotatedSecret[] = [];
  for (const [j, entry] of entries.entries()) {
    const where = entry.secret_file === undefined ? 'secret' : 'secret_file';
    const secret =
      entry.secret_file === undefined
        ? (entry.secret ?? null)
        : readSecretFile(ctx, at('signing_secrets', j, 'secret_file'), entry.secret_file);
    if (secret === null) return null;
    const weak = weakSecret(secret);
    if (weak !== null) ctx.warnings.add(at('signing_secrets', j, where), weak);
    const verifyUntilS = entry.verify_until === undefined ? null : unixSeconds(entry.verify_until);
    if (verifyUntilS !== null && verifyUntilS <= ctx.nowS) {
      const when = new Date(verifyUntilS * 1000).toISOString();
      ctx.warnings.add(
        at('signing_secrets', j, 'verify_until'),
        `the secret "${entry.kid}" stopped verifying at ${when}: remove it`,
      );
    }
    out.push({ kid: entry.kid, secret, verifyUntilS });
  }
  return out;
}

/** A validated RFC 3339 time (`expires_at`, `verify_until`) as unix seconds. */
function unixSeconds(time: string): number {
  return Math.floor(Date.parse(time) / 1000);
}

/** Keys expiring this close are warned about, so a rotation can be planned. */
const EXPIRY_WARNING_S = 14 * 24 * 3600;

function expiryWarning(expiresAt: number, nowS: number): string | null {
  const when = new Date(expiresAt * 1000).toISOString();
  if (expiresAt <= nowS)
    return `the key expired at ${when}: requests with it are refused (401 expired_api_key)`;
  if (expiresAt - nowS > EXPIRY_WARNING_S) return null;
  const days = (expiresAt - nowS) / 86_400;
  return `the key expires at ${when}, in ${days < 1 ? 'less than a day' : `${Math.floor(days)} day(s)`}`;
}

const PLACEHOLDER = /replace[-_ ]?me|change[-_ ]?me|example|placeholder|dummy|your[-_ ]?secret|^secret$/i;

/** Why a signing secret is weak (a placeholder, or under the 256 bits RFC 7518 §3.2 asks for HS256). */
function weakSecret(secret: string): string | null {
  if (PLACEHOLDER.test(secret))
    return 'the signing secret looks like a placeholder: use a random value of 32 bytes or more';
  if (Buffer.byteLength(secret, 'utf8') < 32) {
    return 'the signing secret is shorter than 32 bytes (RFC 7518 §3.2 wants 256 bits for HS256)';
  }
  return null;
}
