import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { StringPack } from '../../src/util/string-pack.js';

const BUILT = fileURLToPath(new URL('../../dist/src/util/string-pack.js', import.meta.url));

/**
 * MiB still held after `items` (each a 40-character slice of a 32 MiB text, or '') were packed and
 * sealed and the text dropped: measured in a node of its own with --expose-gc (the built module).
 */
function heldMiB(items: ReadonlyArray<'slice' | ''>): number {
  const script = `
    const { StringPack } = await import(${JSON.stringify(BUILT)});
    gc(); const before = process.memoryUsage().heapUsed;
    let text = 'abcdefgh'.repeat(4 << 20);
    const pack = new StringPack();
    ${JSON.stringify(items)}.forEach((k, i) => pack.add(k === '' ? '' : text.slice(i * 64, i * 64 + 40)));
    pack.seal();
    text = null;
    gc(); gc();
    console.log((process.memoryUsage().heapUsed - before) / 2 ** 20);`;
  const out = execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], {
    encoding: 'utf8',
  });
  return Number(out.trim());
}

describe('StringPack', () => {
  it('gives back every string as added, before and after sealing, across seals', () => {
    const pack = new StringPack();
    const first = ['k000001', 'a-secret-of-32-characters-here!!', '', 'é€😀'];
    expect(first.map((t) => pack.add(t))).toEqual([0, 1, 2, 3]);
    expect(first.map((_, i) => pack.get(i))).toEqual(first);
    pack.seal();
    pack.add('after the seal');
    expect(pack.get(4)).toBe('after the seal');
    pack.seal();
    pack.seal(); // nothing pending: no empty chunk
    expect(pack.size).toBe(5);
    expect([0, 1, 2, 3, 4].map((i) => pack.get(i))).toEqual([...first, 'after the seal']);
  });

  it('keeps a lone surrogate and a lone item exactly (no round trip through UTF-8)', () => {
    const pack = new StringPack();
    pack.add('secret-with-\ud800-lone-surrogate');
    pack.seal();
    expect(pack.get(0)).toBe('secret-with-\ud800-lone-surrogate');
  });

  it('lets go of the text its strings were cut from, whatever the empty ones around them', () => {
    // join hands a lone non-empty string back as it is, empty ones or not: that one must be copied
    for (const items of [['slice'], ['slice', ''], ['', 'slice', ''], ['slice', 'slice']] as const) {
      expect(heldMiB(items), JSON.stringify(items)).toBeLessThan(4);
    }
  });

  it('refuses an index it does not hold', () => {
    const pack = new StringPack();
    pack.add('x');
    for (const bad of [-1, 1, 0.5, Number.NaN]) expect(() => pack.get(bad)).toThrow(RangeError);
  });

  it('holds any strings, sealed at any points (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.string({ unit: 'binary', maxLength: 40 }), fc.boolean()), { maxLength: 3000 }),
        (items) => {
          const pack = new StringPack();
          for (const [text, sealAfter] of items) {
            pack.add(text);
            if (sealAfter) pack.seal();
          }
          const mid = items.map((_, i) => pack.get(i));
          pack.seal();
          const all = items.map((_, i) => pack.get(i));
          const texts = items.map(([text]) => text);
          return mid.every((t, i) => t === texts[i]) && all.every((t, i) => t === texts[i]);
        },
      ),
      { numRuns: 200 },
    );
  });
});
