/**
 * Two processes measured side by side: both on the measured core at the same time, each loaded by
 * its own load generator for the same seconds, so that whatever the host does in those seconds it
 * does to both (why, and the price: "The token verdict side by side" in bench/README.md).
 */

/** One load run on one process, as the bench measures it (run.ts's `once`). */
export type MeasureRun<S> = (
  s: S,
  seconds: number,
) => Promise<{ readonly cpuUs: number; readonly errors: number }>;

export interface Beside {
  /** `b − a` per round, µs of CPU per request. */
  readonly diffs: number[];
  /** Non-2xx answers and socket errors over all rounds, both sides. */
  readonly errors: number;
}

/**
 * Which of `n` processes each side uses in round `r` (from 0): every pairing in turn, so no one
 * process's luck (a few µs per request for its whole life) weighs more than its share. With
 * `distinct`, both sides draw from one list and a process is never paired with itself; null when
 * that cannot be (one process).
 */
export function pairing(r: number, n: number, distinct = false): [number, number] | null {
  const a = r % n;
  const turn = Math.floor(r / n);
  if (!distinct) return [a, (a + turn) % n];
  if (n < 2) return null;
  return [a, (a + 1 + (turn % (n - 1))) % n];
}

/** `a` and `b` loaded at the same time, one run each. */
async function together<S>(measure: MeasureRun<S>, a: S, b: S, seconds: number, bFirst = false) {
  const both = (x: S, y: S) => Promise.all([measure(x, seconds), measure(y, seconds)]);
  const [ra, rb] = bFirst ? (await both(b, a)).reverse() : await both(a, b);
  if (ra === undefined || rb === undefined) throw new Error('a side-by-side run gave no result');
  return { a: ra.cpuUs, b: rb.cpuUs, errors: ra.errors + rb.errors };
}

export interface BesideOptions {
  readonly rounds: number;
  readonly seconds: number;
  /** Seconds of load on both, not counted, before each counted run (see run.ts's BENCH_PRIME). */
  readonly prime: number;
  /** `as` and `bs` are one list: never pair a process with itself. */
  readonly distinct?: boolean;
  /** For the per-round lines on stderr. */
  readonly name: string;
}

/**
 * `rounds` side-by-side runs of a process of `bs` beside one of `as` (see {@link pairing}); the
 * load generator that starts first alternates by round. Null when the lists cannot be paired.
 */
export async function beside<S>(
  as: readonly S[],
  bs: readonly S[],
  measure: MeasureRun<S>,
  o: BesideOptions,
): Promise<Beside | null> {
  const diffs: number[] = [];
  let errors = 0;
  for (let r = 0; r < o.rounds; r++) {
    const pair = pairing(r, as.length, o.distinct);
    if (pair === null) return null;
    const a = as[pair[0]] as S;
    const b = bs[pair[1]] as S;
    if (o.prime > 0) await together(measure, a, b, o.prime);
    const m = await together(measure, a, b, o.seconds, r % 2 === 1);
    diffs.push(m.b - m.a);
    errors += m.errors;
    process.stderr.write(
      `  beside ${r + 1} ${o.name.padEnd(28)} ${m.a.toFixed(1).padStart(6)} / ${m.b.toFixed(1).padStart(6)} µs CPU/req, b − a ${(m.b - m.a).toFixed(1)}\n`,
    );
  }
  return { diffs, errors };
}
