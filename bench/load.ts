import { execFileSync, spawnSync } from 'node:child_process';
import { pinned } from './pin.js';

export interface LoadResult {
  readonly rps: number;
  /** Requests completed in the run. */
  readonly requests: number;
  /** Microseconds. */
  readonly p50: number;
  readonly p99: number;
  readonly errors: number;
}

export interface LoadSpec {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly connections: number;
  readonly seconds: number;
}

export const hasWrk = (() => {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
    return true;
  } catch (err) {
    // wrk --version exits 1 after printing its version
    return (err as { status?: number }).status === 1;
  }
})();

const UNIT: Record<string, number> = { us: 1, ms: 1000, s: 1_000_000 };
const micros = (text: string | undefined): number => {
  const m = /([0-9.]+)(us|ms|s)/.exec(text ?? '');
  return m?.[1] && m[2] ? Number(m[1]) * (UNIT[m[2]] ?? 1) : Number.NaN;
};

/** One bounded load run: wrk when installed (Debian), else autocannon (npm dev dependency). */
export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  return hasWrk ? runWrk(spec) : runAutocannon(spec);
}

function runWrk(spec: LoadSpec): LoadResult {
  const args = ['-t1', `-c${spec.connections}`, `-d${spec.seconds}s`, '--latency', '--timeout', '5s'];
  for (const [k, v] of Object.entries(spec.headers)) args.push('-H', `${k}: ${v}`);
  const [command, argv] = pinned('load', 'wrk', [...args, spec.url]);
  const r = spawnSync(command, argv, { encoding: 'utf8', timeout: (spec.seconds + 30) * 1000 });
  const out = r.stdout;
  const rps = Number(/Requests\/sec:\s+([0-9.]+)/.exec(out)?.[1] ?? Number.NaN);
  const non2xx = Number(/Non-2xx or 3xx responses:\s+([0-9]+)/.exec(out)?.[1] ?? 0);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const socketErrors = socket ? socket.slice(1).reduce((a, b) => a + Number(b), 0) : 0;
  return {
    rps,
    requests: Number(/(\d+) requests in/.exec(out)?.[1] ?? Number.NaN),
    p50: micros(/\s50%\s+(\S+)/.exec(out)?.[1]),
    p99: micros(/\s99%\s+(\S+)/.exec(out)?.[1]),
    errors: non2xx + socketErrors,
  };
}

async function runAutocannon(spec: LoadSpec): Promise<LoadResult> {
  const { default: autocannon } = (await import('autocannon')) as unknown as {
    default: (o: object) => Promise<{
      requests: { average: number; total: number };
      latency: { p50: number; p99: number };
      non2xx: number;
      errors: number;
    }>;
  };
  const r = await autocannon({
    url: spec.url,
    headers: spec.headers,
    connections: spec.connections,
    duration: spec.seconds,
  });
  return {
    rps: r.requests.average,
    requests: r.requests.total,
    p50: r.latency.p50 * 1000,
    p99: r.latency.p99 * 1000,
    errors: r.non2xx + r.errors,
  };
}
