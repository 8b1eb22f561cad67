import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DigestIndex, digestOfHex, slotOf } from '../../src/util/digest-index.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest();

describe('DigestIndex', () => {
  it('numbers digests in the order added and finds each, across every growth', () => {
    const index = new DigestIndex();
    const n = 5_000; // past the first table (1,024 digests) twice over
    for (let i = 0; i < n; i++) expect(index.add(sha256(`key ${i}`))).toBe(-1);
    expect(index.size).toBe(n);
    for (let i = 0; i < n; i++) expect(index.find(sha256(`key ${i}`))).toBe(i);
    expect(index.find(sha256(`key ${n}`))).toBe(-1);
    expect(index.digest(1234)).toEqual(sha256('key 1234'));
    expect(index.digest(n)).toBeUndefined();
    expect(index.digest(-1)).toBeUndefined();
  });

  it('takes the number of digests to expect, and still grows past it', () => {
    for (const expected of [0, 1, 3_000, 10_000]) {
      const index = new DigestIndex(expected);
      for (let i = 0; i < 5_000; i++) expect(index.add(sha256(`key ${i}`))).toBe(-1);
      for (let i = 0; i < 5_000; i++) expect(index.add(sha256(`key ${i}`))).toBe(i);
      expect(index.size).toBe(5_000);
      expect(index.find(sha256('key 5000'))).toBe(-1);
      expect(index.digest(4_999)).toEqual(sha256('key 4999'));
    }
  });

  it('answers an equal digest with the first one\u2019s number, and adds nothing', () => {
    const index = new DigestIndex();
    index.add(sha256('a'));
    index.add(sha256('b'));
    expect(index.add(sha256('b'))).toBe(1);
    expect(index.add(Buffer.from(sha256('a')))).toBe(0);
    expect(index.size).toBe(2);
  });

  it('tells apart digests that share their first bytes (one slot), and keeps a copy of each', () => {
    const index = new DigestIndex();
    const base = sha256('same start');
    const variants = Array.from({ length: 40 }, (_, i) => {
      const d = Buffer.from(base);
      d[31] = i;
      return d;
    });
    for (const d of variants) expect(index.add(d)).toBe(-1);
    base.fill(0); // the caller's buffer changes: the index kept its own bytes
    variants.forEach((d, i) => {
      expect(index.find(d)).toBe(i);
    });
    const other = Buffer.from(variants[0] as Buffer);
    other[31] = 200;
    expect(index.find(other)).toBe(-1);
    expect(index.find(other.subarray(0, 31))).toBe(-1);
    const latin1 = (d: Buffer) => d.toString('latin1');
    expect(index.findLatin1(latin1(variants[7] as Buffer))).toBe(7);
    expect(index.findLatin1(latin1(other))).toBe(-1);
    expect(index.findLatin1(latin1(variants[7] as Buffer).slice(0, 31))).toBe(-1);
    expect(index.findLatin1(`${latin1(variants[7] as Buffer)}x`)).toBe(-1);
  });

  it('agrees with a Map over any sequence of adds and finds', () => {
    const digest = fc.uint8Array({ minLength: 32, maxLength: 32 });
    // a few distinct first bytes, so that digests often share a slot
    const clustered = fc
      .tuple(fc.constantFrom(0, 1, 255), digest)
      .map(([b, d]) => Uint8Array.from([b, b, b, b, ...d.subarray(4)]));
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.boolean(), fc.oneof(digest, clustered)), { maxLength: 3000 }),
        (ops) => {
          const index = new DigestIndex();
          const model = new Map<string, number>();
          for (const [isAdd, d] of ops) {
            const k = Buffer.from(d).toString('hex');
            const known = model.get(k) ?? -1;
            if (isAdd) {
              expect(index.add(d)).toBe(known);
              if (known === -1) model.set(k, model.size);
            } else {
              expect(index.find(d)).toBe(known);
              expect(index.findLatin1(Buffer.from(d).toString('latin1'))).toBe(known);
            }
          }
          expect(index.size).toBe(model.size);
        },
      ),
      { numRuns: 60 },
    );
  });

  // Found by this stop's attack: 40,000 `key_sha256` values sharing their first bytes took 10 s to
  // check when the slot was those bytes. A config's values need not be uniform.
  it('spreads digests that differ only in their last bytes, or only in their first, over the slots', () => {
    const spread = (make: (i: number) => Buffer) => {
      const slots = new Set<number>();
      for (let i = 0; i < 4096; i++) slots.add(slotOf(make(i)) & 0xffff);
      return slots.size;
    };
    const tail = (i: number) => {
      const d = Buffer.alloc(32, 0xde);
      d.writeUInt16BE(i, 30);
      return d;
    };
    const head = (i: number) => {
      const d = Buffer.alloc(32);
      d.writeUInt16BE(i, 0);
      return d;
    };
    // 4,096 uniform draws into 65,536 slots hit ~3,970 different ones
    expect(spread(tail)).toBeGreaterThan(3800);
    expect(spread(head)).toBeGreaterThan(3800);
    const index = new DigestIndex();
    for (let i = 0; i < 4096; i++) index.add(tail(i));
    for (let i = 0; i < 4096; i++) expect(index.find(tail(i))).toBe(i);
    expect(index.findLatin1(tail(77).toString('latin1'))).toBe(77);
  });

  it('reads a hex sha256 in either case, and refuses anything else', () => {
    const d = sha256('x');
    expect(digestOfHex(d.toString('hex'))).toEqual(d);
    expect(digestOfHex(d.toString('hex').toUpperCase())).toEqual(d);
    for (const bad of ['', 'ab', `${d.toString('hex')}00`, `${d.toString('hex').slice(0, 62)}zz`]) {
      expect(() => digestOfHex(bad)).toThrow('an unchecked sha256');
    }
  });
});
