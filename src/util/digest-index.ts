import { randomBytes } from 'node:crypto';

/** Bytes in a digest: sha256. */
const SIZE = 32;

/**
 * Numbers by 32-byte digest (sha256 of an API key): the digests end to end in one buffer, found by
 * open addressing over a table of positions, no string or Map entry per digest. 100,000 keys take
 * ~4 MiB and ~20 ms to index when the count is given up front (~50 ms growing from the default
 * size), where a Map keyed by digest strings held ~80 B and took ~75 ms. The slot is a seeded hash
 * of the whole digest (a `key_sha256` is what a config says, not always a uniform sha256), and the
 * table is never more than half full, so a search reads one or two digests. A digest is only ever
 * compared with another digest: no key and no secret passes through here.
 */
export class DigestIndex {
  private digests: Buffer;
  /** Per slot: 1 + the number of the digest there, or 0 for an empty slot. */
  private slots: Int32Array;
  private count = 0;

  /** `expected`: how many digests will be added (a config's key count), so the table never grows. */
  constructor(expected = 0) {
    let slots = 2048;
    while (slots < expected * 2) slots *= 2;
    this.slots = new Int32Array(slots);
    this.digests = Buffer.alloc(SIZE * (slots / 2));
  }

  get size(): number {
    return this.count;
  }

  /**
   * Adds `digest` (its first 32 bytes) as number `size`, or, when an equal one is in already,
   * adds nothing and returns that one's number; -1 when it was added.
   */
  add(digest: Uint8Array): number {
    if ((this.count + 1) * 2 > this.slots.length) this.grow();
    const slot = this.slotFor(digest);
    const entry = this.slots[slot] as number;
    if (entry !== 0) return entry - 1;
    this.digests.set(digest.length === SIZE ? digest : digest.subarray(0, SIZE), this.count * SIZE);
    this.slots[slot] = ++this.count;
    return -1;
  }

  /** The number of the digest equal to `digest`, or -1. */
  find(digest: Uint8Array): number {
    return (this.slots[this.slotFor(digest)] as number) - 1;
  }

  /**
   * {@link find} for a digest given as a latin1 string, one character a byte (what
   * `crypto.hash(…, 'binary')` returns): a request's lookup, which a new Buffer per request would
   * cost more than the search.
   */
  findLatin1(digest: string): number {
    if (digest.length !== SIZE) return -1;
    const mask = this.slots.length - 1;
    for (let slot = slotOfLatin1(digest) & mask; ; slot = (slot + 1) & mask) {
      const entry = this.slots[slot] as number;
      if (entry === 0) return -1;
      if (this.equalsLatin1(entry - 1, digest)) return entry - 1;
    }
  }

  /** The digest numbered `n` (a copy), or undefined. */
  digest(n: number): Buffer | undefined {
    if (!Number.isInteger(n) || n < 0 || n >= this.count) return undefined;
    return Buffer.from(this.digests.subarray(n * SIZE, (n + 1) * SIZE));
  }

  private equals(n: number, digest: Uint8Array): boolean {
    const at = n * SIZE;
    for (let i = 0; i < SIZE; i++) if (this.digests[at + i] !== digest[i]) return false;
    return true;
  }

  private equalsLatin1(n: number, digest: string): boolean {
    const at = n * SIZE;
    for (let i = 0; i < SIZE; i++) if (this.digests[at + i] !== digest.charCodeAt(i)) return false;
    return true;
  }

  /** One walk from the digest's slot: the slot of an equal digest, or else the empty one it would take. */
  private slotFor(digest: Uint8Array): number {
    const mask = this.slots.length - 1;
    let slot = slotOf(digest) & mask;
    for (let entry = this.slots[slot] as number; entry !== 0; entry = this.slots[slot] as number) {
      if (this.equals(entry - 1, digest)) return slot;
      slot = (slot + 1) & mask;
    }
    return slot;
  }

  /** Twice the room: a longer buffer, a table twice the size with every digest placed again. */
  private grow(): void {
    const digests = Buffer.alloc(this.digests.length * 2);
    this.digests.copy(digests);
    this.digests = digests;
    this.slots = new Int32Array(this.slots.length * 2);
    for (let n = 0; n < this.count; n++) {
      this.slots[this.slotFor(this.digests.subarray(n * SIZE, (n + 1) * SIZE))] = n + 1;
    }
  }
}

const scratch = Buffer.alloc(SIZE);

/**
 * The 32 bytes of a hex sha256 that validation accepted, in one buffer kept for it: valid until the
 * next call (the index copies what it adds). A new Buffer per key cost ~0.4 µs more, 40 ms of a
 * 100,000-key start.
 */
export function digestOfHex(sha256Hex: string): Buffer {
  if (sha256Hex.length !== SIZE * 2 || scratch.write(sha256Hex, 'hex') !== SIZE) {
    throw new Error('an unchecked sha256 reached the index');
  }
  return scratch;
}

/**
 * Mixed into every slot, new in each process: `key_sha256` values are whatever a config says, and
 * values that share their bytes (`00…01`, `00…02`, or chosen to) would otherwise fill one run of
 * slots and make every add and search walk it (40,000 such keys took 10 s to check).
 */
const SEED = randomBytes(4).readUInt32LE(0);

/** A slot for a digest: MurmurHash3 (x86, 32-bit) of its eight words, seeded. Exported for its test. */
export function slotOf(digest: Uint8Array): number {
  let h = SEED;
  for (let i = 0; i < SIZE; i += 4) {
    h = mix(
      h,
      (digest[i] as number) |
        ((digest[i + 1] as number) << 8) |
        ((digest[i + 2] as number) << 16) |
        ((digest[i + 3] as number) << 24),
    );
  }
  return finish(h);
}

/** {@link slotOf} for a digest as a latin1 string (the same slot for the same bytes). */
function slotOfLatin1(digest: string): number {
  let h = SEED;
  for (let i = 0; i < SIZE; i += 4) {
    h = mix(
      h,
      digest.charCodeAt(i) |
        (digest.charCodeAt(i + 1) << 8) |
        (digest.charCodeAt(i + 2) << 16) |
        (digest.charCodeAt(i + 3) << 24),
    );
  }
  return finish(h);
}

/** One MurmurHash3 round: the word scrambled into the hash. */
function mix(h: number, word: number): number {
  let k = Math.imul(word, 0xcc9e2d51);
  k = (k << 15) | (k >>> 17);
  k = Math.imul(k, 0x1b873593);
  const x = h ^ k;
  return (Math.imul((x << 13) | (x >>> 19), 5) + 0xe6546b64) | 0;
}

/** MurmurHash3's finish, for a length of 32 bytes: every bit of the hash reaches every bit. */
function finish(hash: number): number {
  let h = hash ^ SIZE;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
