import { cpuMicros } from './cpu.js';
import { type LoadResult, requestHeads, runLoad } from './load.js';
import { median } from './median.js';
import type { Recorded } from './mix/mix.js';

/** A process under load: its port, and the pid whose CPU (with its children's) is read. */
export interface Proc {
  readonly port: number;
  readonly pid: number;
}

export interface Target extends Proc {
  readonly name: string;
  /** More processes serving the same, started alike: round r measures process r mod n. */
  readonly also?: readonly Proc[];
  readonly path: string;
  headers(): Record<string, string>;
  /** Another process whose CPU per request is reported beside (Redis for the Redis row). */
  readonly sidePid?: number | undefined;
  /**
   * A row measured on this target's own process, with other headers, in slices alternated with
   * this target's (A B B A, then B A A B): the difference of the two is then the same process's,
   * at the same seconds. See {@link abba}.
   */
  readonly control?: { readonly name: string; headers(): Record<string, string> } | undefined;
  /** Sent these recorded clients' requests in turn (mix/) instead of one fixed request. */
  readonly mix?: Recorded | undefined;
}

export type Run = LoadResult & { cpuUs: number; sideCpuUs: number };

export interface Measured {
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  /** CPU the serving process spent per request served, µs (median of the rounds). */
  readonly cpuUs: number;
  /** The same, round by round: differences are taken within a round (paired), then the median. */
  readonly cpuRounds: readonly number[];
  readonly sideCpuUs: number;
  readonly errors: number;
  /** The fewest requests per second of any counted run. */
  readonly minRps: number;
}

export interface RoundsOptions {
  readonly rounds: number;
  readonly seconds: number;
  readonly connections: number;
  /** Load runs per target, not counted, before the rounds. */
  readonly warmup: number;
  /** Seconds of load, not counted, on a process just before each counted run (0: none). */
  readonly prime: number;
  /** The targets in the order round `r` (from 1) measures them; all of them in turn by default. */
  readonly order?: (round: number, targets: readonly Target[]) => readonly Target[];
}

/** One load run on `t`, and the CPU per request its process (and `sidePid`'s) spent on it. */
export async function once(t: Target, connections: number, seconds: number): Promise<Run> {
  const before = cpuMicros(t.pid);
  const sideBefore = t.sidePid === undefined ? 0 : cpuMicros(t.sidePid);
  const url = `http://127.0.0.1:${t.port}${t.path}`;
  const headers = t.headers();
  const requests = t.mix && requestHeads(url, headers, t.mix);
  const r = await runLoad({ url, headers, requests, connections, seconds });
  const side = t.sidePid === undefined ? 0 : cpuMicros(t.sidePid) - sideBefore;
  return { ...r, cpuUs: (cpuMicros(t.pid) - before) / r.requests, sideCpuUs: side / r.requests };
}

/** A target's processes: its own, then its `also`, each as a target of its own. */
export const processes = (t: Target): Target[] => [t, ...(t.also ?? []).map((p) => ({ ...t, ...p }))];

/**
 * `t` and its control on `t`'s process in four slices of half a round each, A B B A (B A A B in
 * even rounds), each side's CPU summed over its two slices ("The policy's cost read within its own
 * processes" in bench/README.md).
 */
async function abba(t: Target, round: number, connections: number, seconds: number) {
  const control = t.control as NonNullable<Target['control']>;
  const sides = { main: t, control: { ...t, headers: control.headers } };
  const order =
    round % 2 === 1 ? ['main', 'control', 'control', 'main'] : ['control', 'main', 'main', 'control'];
  const slices = { main: [] as Run[], control: [] as Run[] };
  const slice = Math.max(1, Math.round(seconds / 2));
  for (const side of order as Array<'main' | 'control'>)
    slices[side].push(await once(sides[side], connections, slice));
  return [
    [t.name, combined(slices.main)],
    [control.name, combined(slices.control)],
  ] as Array<[string, Run]>;
}

/** Slices of one side as one run: CPU and requests summed, latencies the median of the slices'. */
function combined(rs: readonly Run[]): Run {
  const requests = rs.reduce((a, r) => a + r.requests, 0);
  const weighted = (f: (r: Run) => number) => rs.reduce((a, r) => a + f(r) * r.requests, 0) / requests;
  return {
    ...summary(rs),
    requests,
    cpuUs: weighted((r) => r.cpuUs),
    sideCpuUs: weighted((r) => r.sideCpuUs),
  };
}

/** Runs of one target: the median of each figure, errors summed. */
function summary(rs: readonly Run[]) {
  const m = (f: (r: Run) => number) => median(rs.map(f));
  const errors = rs.reduce((a, r) => a + r.errors, 0);
  return { rps: m((r) => r.rps), p50: m((r) => r.p50), p99: m((r) => r.p99), errors };
}

/** Every target once per round, interleaved, after a warm-up; medians over the rounds. */
export async function measure(targets: readonly Target[], o: RoundsOptions): Promise<Map<string, Measured>> {
  const runs = new Map<string, Run[]>(
    targets.flatMap((t) => [t.name, ...(t.control ? [t.control.name] : [])]).map((n) => [n, []]),
  );
  // Warm-up: load runs with new connections each ("A warm-up that includes connection churn").
  for (let i = 0; i < o.warmup; i++)
    for (const t of targets) for (const p of processes(t)) await once(p, o.connections, o.seconds);
  for (let round = 1; round <= o.rounds; round++) {
    for (const t of o.order?.(round, targets) ?? targets) {
      const all = processes(t);
      const p = all[(round - 1) % all.length] as Target;
      // Idle since its last run, V8 has shrunk the heap and may have dropped compiled code: a short
      // run, not counted, brings the process back to its steady state first.
      if (o.prime > 0) await once(p, o.connections, o.prime);
      const measured: Array<[string, Run]> = t.control
        ? await abba(p, round, o.connections, o.seconds)
        : [[t.name, await once(p, o.connections, o.seconds)]];
      for (const [name, r] of measured) {
        runs.get(name)?.push(r);
        const rps = String(Math.round(r.rps)).padStart(6);
        process.stderr.write(
          `  round ${round} ${name.padEnd(36)} ${rps} req/s ${r.cpuUs.toFixed(1).padStart(6)} µs CPU/req\n`,
        );
      }
    }
  }
  const of = (rs: Run[]): Measured => ({
    ...summary(rs),
    cpuUs: median(rs.map((r) => r.cpuUs)),
    cpuRounds: rs.map((r) => r.cpuUs),
    sideCpuUs: median(rs.map((r) => r.sideCpuUs)),
    minRps: Math.min(...rs.map((r) => r.rps)),
  });
  return new Map([...runs].map(([name, rs]) => [name, of(rs)]));
}
