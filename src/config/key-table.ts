import { createSecretKey, hash as cryptoHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { checkedRange, createIpMatcher, type IpMatcher } from '../net/ip.js';
import { DigestIndex, digestOfHex } from '../util/digest-index.js';
import { StringPack } from '../util/string-pack.js';
import type { AccessType, ApiKey, Purpose, ResolvedKey, SigningSecret } from './keys.js';

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

/** A `signing_secrets` entry, its texts as indexes into the table's pack. */
interface PackedRotation {
  readonly kid: number;
  readonly secret: number;
  readonly verifyUntilS: number | null;
}

/**
 * The API keys of one config, packed so that 100,000 keys stay small and load fast: per key its
 * sha256 in a {@link DigestIndex}, the name, the signing secret's text and a kind number;
 * origins (as text) and CORS lists only for the keys that have them. The texts are kept in
 * {@link StringPack}s (a few long strings, none a slice of the config's text); {@link seal} after
 * adding. The ApiKey object (with its KeyObjects and its origin matcher) is built when a request
 * names the key, and the last {@link BUILT} built are kept.
 */
export class KeyTable {
  /** Key `i`'s sha256 is digest `i`. */
  private readonly index: DigestIndex;
  /** Name and signing secret of key `i` are item `i` of these (a rotating key's secret is ''). */
  private readonly names = new StringPack();
  private readonly secrets = new StringPack();
  /** Every other text (origins, rotation kids and secrets), by index from the maps below. */
  private readonly texts = new StringPack();
  private count = 0;
  /** Per key: its index in KINDS. */
  private kinds: Uint8Array;
  /**
   * Per key: where its `origin_ips` are in `texts` (one text, comma-separated: parsed into a
   * matcher when the key is built), or -1 when it has none.
   */
  private origins: Int32Array;
  private readonly cors = new Map<number, ReadonlySet<string>>();
  private readonly allCors = new Set<string>();
  private readonly expires = new Map<number, number>();
  /** Keys with `signing_secrets`: every entry (the minting one first). */
  private readonly rotations = new Map<number, readonly PackedRotation[]>();
  private readonly built = new LRUCache<number, ApiKey>({ max: BUILT });

  /** `expected`: how many keys will be added, so that the index and the columns never grow. */
  constructor(expected = 0) {
    this.index = new DigestIndex(expected);
    this.kinds = new Uint8Array(Math.max(1024, expected));
    this.origins = new Int32Array(Math.max(1024, expected));
  }

  get size(): number {
    return this.count;
  }

  add({ raw, sha256, secret, rotation, expiresAtS }: ResolvedKey): void {
    const at = this.count++;
    if (at === this.kinds.length) this.grow();
    if (this.index.add(digestOfHex(sha256)) !== -1) throw new Error('a key value twice reached the build');
    this.names.add(raw.name);
    // a rotating key's secrets live in `rotations`, the minting one first: not kept twice
    this.secrets.add(rotation === null ? secret : '');
    this.kinds[at] = kindOf(raw.access_type, raw.purpose);
    this.origins[at] = raw.origin_ips === undefined ? -1 : this.texts.add(raw.origin_ips.join(','));
    if (expiresAtS !== null) this.expires.set(at, expiresAtS);
    if (rotation !== null) {
      this.rotations.set(
        at,
        rotation.map((r) => ({
          kid: this.texts.add(r.kid),
          secret: this.texts.add(r.secret),
          verifyUntilS: r.verifyUntilS,
        })),
      );
    }
    if (raw.cors_origins) {
      const origins = raw.cors_origins.map(own);
      this.cors.set(at, new Set(origins));
      for (const o of origins) this.allCors.add(o);
    }
  }

  /** Twice the room for the per-key columns. */
  private grow(): void {
    const kinds = new Uint8Array(this.kinds.length * 2);
    kinds.set(this.kinds);
    this.kinds = kinds;
    const origins = new Int32Array(this.origins.length * 2);
    origins.set(this.origins);
    this.origins = origins;
  }

  /** Copies the texts added so far into the packs: the config's text they were cut from can go. */
  seal(): void {
    this.names.seal();
    this.secrets.seal();
    this.texts.seal();
  }

  /** The key whose value is `presented`, hashed here: no comparison ever runs over key values. */
  findByValue(presented: string): ApiKey | undefined {
    const digest = cryptoHash('sha256', presented, 'binary');
    return this.at(this.index.findLatin1(digest), digest);
  }

  /** The key with this lowercase hex sha256 (what `key_sha256` holds). */
  get(sha256Hex: string): ApiKey | undefined {
    if (!SHA256_HEX.test(sha256Hex)) return undefined;
    const digest = Buffer.from(sha256Hex, 'hex').toString('latin1');
    return this.at(this.index.findLatin1(digest), digest);
  }

  /** Every key's name, in config order. */
  nameList(): readonly string[] {
    return Array.from({ length: this.size }, (_, i) => this.names.get(i));
  }

  /** Name and `expires_at` (unix seconds) of every key that has one. */
  *expiries(): Iterable<readonly [string, number]> {
    for (const [i, s] of this.expires) yield [this.names.get(i), s];
  }

  /** Every origin some key names in its own `cors_origins`. */
  keyCorsOrigins(): ReadonlySet<string> {
    return this.allCors;
  }

  /** The key at `i` (-1: none), built on first use; `digest` is its sha256 (latin1). */
  private at(i: number, digest: string): ApiKey | undefined {
    if (i === -1) return undefined;
    const hit = this.built.get(i);
    if (hit !== undefined) return hit;
    const [access, purpose] = KINDS[this.kinds[i] as number] ?? KINDS[0] ?? ['READ', 'SERVER'];
    const rotation = this.rotations.get(i);
    const origins = this.origins[i] as number;
    const text = (at: number) => this.texts.get(at);
    const verifiers: SigningSecret[] = rotation
      ? rotation.map((r) => ({
          kid: text(r.kid),
          key: secretKey(text(r.secret)),
          verifyUntilS: r.verifyUntilS,
        }))
      : [{ kid: null, key: secretKey(this.secrets.get(i)), verifyUntilS: null }];
    const minting = verifiers[0] as SigningSecret;
    const key: ApiKey = Object.freeze({
      name: this.names.get(i),
      sha256: Buffer.from(digest, 'latin1').toString('hex'),
      access,
      purpose,
      secret: minting.key,
      kid: minting.kid,
      verifiers: Object.freeze(verifiers),
      origins: matcherOf(origins === -1 ? undefined : this.texts.get(origins)),
      corsOrigins: this.cors.get(i) ?? null,
      needsLead: access === 'READ' && purpose === 'STOREFRONT',
      expiresAtS: this.expires.get(i) ?? null,
    });
    this.built.set(i, key);
    return key;
  }
}

/** A hex sha256 (lower or upper case, as `key_sha256` may be written). */
const SHA256_HEX = /^[0-9a-fA-F]{64}$/;

/**
 * A flat copy of a string (a CORS origin). Strings cut from the parsed YAML text are V8 slices that
 * keep the whole text alive (17 MiB for 100,000 keys).
 */
function own(text: string): string {
  return Buffer.from(text, 'utf8').toString('utf8');
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
