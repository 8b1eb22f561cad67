import { createSecretKey, hash as cryptoHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { checkedRange, createIpMatcher, type IpMatcher } from '../net/ip.js';
import type { AccessType, ApiKey, Purpose, ResolvedKey, RotatedSecret, SigningSecret } from './keys.js';

const KINDS: ReadonlyArray<readonly [AccessType, Purpose | null]> = [
  ['READ', 'SERVER'],
  ['READ', 'STOREFRONT'],
  ['WRITE', null],
];

/** The index in KINDS of a key's access type and purpose (validation allows no other pair). */
const kindOf = (access: AccessType, purpose: Purpose | undefined): number =>
  access === 'WRITE' ? 2 : purpose === 'STOREFRONT' ? 1 : 0;

/** Key objects kept built at once: the keys in use; the rest are packed until asked for. */
const BUILT = 10_000;

/**
 * The API keys of one config, packed so that 100,000 keys stay small and load fast: per key a Map
 * entry keyed by the 32-byte binary sha256, the name, the signing secret's text and a kind number;
 * origins (as text) and CORS lists only for the keys that have them. The ApiKey object (with its
 * KeyObjects and its origin matcher) is built when a request names the key, and the last
 * {@link BUILT} built are kept.
 */
export class KeyTable {
  private readonly index = new Map<string, number>();
  private readonly names: string[] = [];
  private readonly secrets: string[] = [];
  private readonly kinds: number[] = [];
  /** `origin_ips` as one text, comma-separated: parsed into a matcher when the key is built. */
  private readonly origins = new Map<number, string>();
  private readonly cors = new Map<number, ReadonlySet<string>>();
  private readonly allCors = new Set<string>();
  private readonly expires = new Map<number, number>();
  /** Keys with `signing_secrets`: every entry (the minting one first), as text until built. */
  private readonly rotations = new Map<number, readonly RotatedSecret[]>();
  private readonly built = new LRUCache<number, ApiKey>({ max: BUILT });

  get size(): number {
    return this.names.length;
  }

  add({ raw, sha256, secret, rotation, expiresAtS }: ResolvedKey): void {
    const at = this.names.length;
    this.index.set(binaryOf(sha256), at);
    this.names.push(ownAscii(raw.name));
    // a rotating key's secrets live in `rotations`, the minting one first: not kept twice
    this.secrets.push(rotation === null ? own(secret) : '');
    this.kinds.push(kindOf(raw.access_type, raw.purpose));
    if (raw.origin_ips !== undefined) this.origins.set(at, own(raw.origin_ips.join(',')));
    if (expiresAtS !== null) this.expires.set(at, expiresAtS);
    if (rotation !== null) {
      this.rotations.set(
        at,
        rotation.map((r) => ({ kid: own(r.kid), secret: own(r.secret), verifyUntilS: r.verifyUntilS })),
      );
    }
    if (raw.cors_origins) {
      this.cors.set(at, new Set(raw.cors_origins));
      for (const o of raw.cors_origins) this.allCors.add(o);
    }
  }

  /** The key whose value is `presented`, hashed here: no comparison ever runs over key values. */
  findByValue(presented: string): ApiKey | undefined {
    const hash = cryptoHash('sha256', presented, 'binary');
    return this.at(this.index.get(hash), hash);
  }

  /** The key with this lowercase hex sha256 (what `key_sha256` holds). */
  get(sha256Hex: string): ApiKey | undefined {
    const hash = binaryOf(sha256Hex);
    return this.at(this.index.get(hash), hash);
  }

  /** Every key's name, in config order. */
  nameList(): readonly string[] {
    return this.names;
  }

  /** Name and `expires_at` (unix seconds) of every key that has one. */
  *expiries(): Iterable<readonly [string, number]> {
    for (const [i, s] of this.expires) yield [this.names[i] ?? '', s];
  }

  /** Every origin some key names in its own `cors_origins`. */
  keyCorsOrigins(): ReadonlySet<string> {
    return this.allCors;
  }

  /** The key at `i`, built on first use; `hash` is its binary sha256. */
  private at(i: number | undefined, hash: string): ApiKey | undefined {
    if (i === undefined) return undefined;
    const hit = this.built.get(i);
    if (hit !== undefined) return hit;
    const [access, purpose] = KINDS[this.kinds[i] ?? 0] ?? KINDS[0] ?? ['READ', 'SERVER'];
    const rotation = this.rotations.get(i);
    const verifiers: SigningSecret[] = rotation
      ? rotation.map((r) => ({ kid: r.kid, key: secretKey(r.secret), verifyUntilS: r.verifyUntilS }))
      : [{ kid: null, key: secretKey(this.secrets[i] ?? ''), verifyUntilS: null }];
    const minting = verifiers[0] as SigningSecret;
    const key: ApiKey = Object.freeze({
      name: this.names[i] ?? '',
      sha256: Buffer.from(hash, 'latin1').toString('hex'),
      access,
      purpose,
      secret: minting.key,
      kid: minting.kid,
      verifiers: Object.freeze(verifiers),
      origins: matcherOf(this.origins.get(i)),
      corsOrigins: this.cors.get(i) ?? null,
      needsLead: access === 'READ' && purpose === 'STOREFRONT',
      expiresAtS: this.expires.get(i) ?? null,
    });
    this.built.set(i, key);
    return key;
  }
}

const scratch = Buffer.alloc(32);

/**
 * The 32 bytes of a hex sha256 as a latin1 string, through one buffer kept for it: a new Buffer per
 * key cost ~0.4 µs more, 40 ms of a 100,000-key start. Any text but 64 characters (only `get`
 * could pass one) takes the general path, so nothing longer is cut to 32 bytes.
 */
function binaryOf(sha256Hex: string): string {
  if (sha256Hex.length !== 64) return Buffer.from(sha256Hex, 'hex').toString('latin1');
  return scratch.toString('latin1', 0, scratch.write(sha256Hex, 'hex'));
}

/**
 * A flat copy of a string. Strings cut from the parsed YAML text are V8 slices that keep the whole
 * text alive (11 MiB for 100,000 keys); the table keeps copies so the text can go.
 */
function own(text: string): string {
  return Buffer.from(text, 'utf8').toString('utf8');
}

/** {@link own} for a text of ASCII only (a key name: schema.ts allows no other character). */
function ownAscii(text: string): string {
  return Buffer.from(text, 'latin1').toString('latin1');
}

/**
 * A key's `origin_ips`, validated at load (a comma is in no address or range), as a matcher. An
 * empty list is a list all the same: it matches no address (CONTRACT §3.1: configured, so enforced).
 */
function matcherOf(list: string | undefined): IpMatcher | null {
  if (list === undefined) return null;
  return createIpMatcher(list === '' ? [] : list.split(',').map(checkedRange));
}

function secretKey(text: string) {
  return createSecretKey(Buffer.from(text, 'utf8'));
}
