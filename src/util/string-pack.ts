/**
 * Many short strings kept as a few long ones: `add` returns an index, `get` the text again.
 *
 * Why: a string cut from a large text (a key's name or secret from a 17 MiB YAML config) is a V8
 * slice that keeps the whole text alive. Copying each one (a Buffer round trip) cost ~0.4 µs a
 * string, a tenth of a 100,000-key start. Here the strings wait in a list until `seal`, which joins
 * them into one new string (one copy of them all) and forgets the slices; `get` then cuts from
 * that. Until `seal`, `get` returns the string as it was added.
 */
export class StringPack {
  /** The sealed texts; item `i` of chunk `c` spans `ends[i - 1]` (0 at a chunk's start) to `ends[i]`. */
  private readonly chunks: string[] = [];
  /** The index of each chunk's first item. */
  private readonly firsts: number[] = [];
  private ends = new Uint32Array(1024);
  /** Added since the last seal, as given. */
  private pending: string[] = [];
  private sealed = 0;

  get size(): number {
    return this.sealed + this.pending.length;
  }

  add(text: string): number {
    const i = this.size;
    if (i === this.ends.length) this.grow();
    const start = this.pending.length === 0 ? 0 : (this.ends[i - 1] as number);
    this.ends[i] = start + text.length;
    this.pending.push(text);
    return i;
  }

  get(i: number): string {
    if (!Number.isInteger(i) || i < 0 || i >= this.size) throw new RangeError(`no item ${i}`);
    if (i >= this.sealed) return this.pending[i - this.sealed] as string;
    const c = this.chunkOf(i);
    const start = i === this.firsts[c] ? 0 : (this.ends[i - 1] as number);
    return (this.chunks[c] as string).slice(start, this.ends[i]);
  }

  /** Joins what was added since the last seal into one new string: no slice of the input is kept. */
  seal(): void {
    if (this.pending.length === 0) return;
    this.chunks.push(joined(this.pending));
    this.firsts.push(this.sealed);
    this.sealed += this.pending.length;
    this.pending = [];
  }

  /** The chunk that holds sealed item `i`: the last whose first item is at or before it. */
  private chunkOf(i: number): number {
    let lo = 0;
    let hi = this.firsts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((this.firsts[mid] as number) <= i) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  private grow(): void {
    const ends = new Uint32Array(this.ends.length * 2);
    ends.set(this.ends);
    this.ends = ends;
  }
}

/**
 * The strings end to end, in a string none of them is. `join` copies two or more non-empty strings
 * into a new one, but skips empty ones and hands a lone one back as it is (a slice of the config's
 * text, say): then the result is copied (a slice of a new string one longer, not of that text).
 */
function joined(texts: readonly string[]): string {
  const all = texts.join('');
  return all !== '' && texts.includes(all) ? ` ${all}`.slice(1) : all;
}
