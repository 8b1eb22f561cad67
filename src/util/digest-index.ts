/** Bytes in a digest: sha256. */
const SIZE = 32;

/**
 * Numbers by 32-byte digest (sha256 of an API key): the digests end to end in one buffer, found by
 * open addressing over a table of positions, no string or Map entry per digest. 100,000 keys take
 * ~4 MiB and ~10 ms to index, where a Map keyed by digest strings held ~80 B and cost ~1 µs per
 * key. The slot is read off the digest's first four bytes: a sha256 is uniform, and the table is
 * never more than half full, so a search reads one or two digests. A digest is only ever
 * compared with another digest: no key and no secret passes through here.
 */
export class DigestIndex {
  private digests = Buffer.alloc(SIZE * 1024);
  /** Per slot: 1 + the number of the digest there, or 0 for an empty slot. */
  private slots = new Int32Array(2048);
  private count = 0;

  get size(): number {
    return this.count;
  }

  /**
   * Adds `digest` (its first 32 bytes) as number `size`, or, when an equal one is in already,
   * adds nothing and returns that one's number; -1 when it was added.
   */
  add(digest: Uint8Array): number {
    const found = this.find(digest);
    if (found !== -1) return found;
    if ((this.count + 1) * 2 > this.slots.length) this.grow();
    this.digests.set(digest.subarray(0, SIZE), this.count * SIZE);
    this.slots[this.emptySlot(digest)] = ++this.count;
    return -1;
  }

  /** The number of the digest equal to `digest`, or -1. */
  find(digest: Uint8Array): number {
    const mask = this.slots.length - 1;
    for (let slot = slotOf(digest) & mask; ; slot = (slot + 1) & mask) {
      const entry = this.slots[slot] as number;
      if (entry === 0) return -1;
      if (this.equals(entry - 1, digest)) return entry - 1;
    }
  }

  /**
   * {@link find} for a digest given as a latin1 string, one character a byte (what
   * `crypto.hash(…, 'binary')` returns): a request's lookup, which a new Buffer per request would
   * cost more than the search.
   */
  findLatin1(digest: string): number {
    if (digest.length !== SIZE) return -1;
    const mask = this.slots.length - 1;
    const first =
      ((digest.charCodeAt(0) << 24) |
        (digest.charCodeAt(1) << 16) |
        (digest.charCodeAt(2) << 8) |
        digest.charCodeAt(3)) >>>
      0;
    for (let slot = first & mask; ; slot = (slot + 1) & mask) {
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

  private emptySlot(digest: Uint8Array): number {
    const mask = this.slots.length - 1;
    let slot = slotOf(digest) & mask;
    while (this.slots[slot] !== 0) slot = (slot + 1) & mask;
    return slot;
  }

  /** Twice the room: a longer buffer, a table twice the size with every digest placed again. */
  private grow(): void {
    const digests = Buffer.alloc(this.digests.length * 2);
    this.digests.copy(digests);
    this.digests = digests;
    this.slots = new Int32Array(this.slots.length * 2);
    for (let n = 0; n < this.count; n++) {
      this.slots[this.emptySlot(this.digests.subarray(n * SIZE, (n + 1) * SIZE))] = n + 1;
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

/** The first four bytes of a digest, as an unsigned number. */
function slotOf(digest: Uint8Array): number {
  return (
    (((digest[0] as number) << 24) |
      ((digest[1] as number) << 16) |
      ((digest[2] as number) << 8) |
      (digest[3] as number)) >>>
    0
  );
}
