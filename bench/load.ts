import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { STOREFRONT_KEY, TOKEN } from './fixture.js';
import { mixedRequests, type Recorded } from './mix/mix.js';
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
  /**
   * Raw request heads sent in turn instead of `headers`' one GET (the mixed-traffic load:
   * mix/mix.ts), each on whichever connection asks next. wrk only.
   */
  readonly requests?: readonly string[];
}

/** wrk is installed (`wrk --version` exits 1 after printing its version). */
const hasWrk = [0, 1].includes(spawnSync('wrk', ['--version'], { stdio: 'ignore' }).status ?? -1);

const run = promisify(execFile);
const UNIT: Record<string, number> = { us: 1, ms: 1000, s: 1_000_000 };
const micros = (text: string | undefined): number => {
  const m = /([0-9.]+)(us|ms|s)/.exec(text ?? '');
  return m?.[1] && m[2] ? Number(m[1]) * (UNIT[m[2]] ?? 1) : Number.NaN;
};

/**
 * One bounded load run by wrk (Debian: wrk) in a child process, awaited: this process goes on
 * reading the log lines the servers under test write to its pipes, as a log shipper would (why:
 * "Log lines read as they are written" in bench/README.md).
 */
export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  if (!hasWrk) throw new Error('the bench needs wrk (Debian: apt-get install wrk)');
  const script = writeRequestScript(spec);
  const args = ['-t1', `-c${spec.connections}`, `-d${spec.seconds}s`, '--latency', '--timeout', '5s'];
  const [command, argv] = pinned('load', 'wrk', [...args, '-s', script.file, spec.url]);
  const timeout = (spec.seconds + 30) * 1000;
  const out = await run(command, argv, { timeout, encoding: 'utf8' })
    .then((r) => r.stdout)
    .finally(script.remove);
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

/**
 * The request heads a run sends in turn, byte for byte: a GET of `url` with `headers` after its
 * Host line, or, given `mix`, the recorded clients' GETs (mix/mix.ts) with the bench's credentials.
 */
export function requestHeads(
  url: string,
  headers: Readonly<Record<string, string>>,
  mix?: Recorded,
): string[] {
  const u = new URL(url);
  if (mix !== undefined) return mixedRequests(mix, { host: u.host, apikey: STOREFRONT_KEY, token: TOKEN });
  const lines = [`GET ${u.pathname}${u.search} HTTP/1.1`, `Host: ${u.host}`];
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
  return [`${lines.join('\r\n')}\r\n\r\n`];
}

/**
 * A wrk script that sends `spec`'s GET as one fixed string, header order included, on every
 * connection of every run, or `spec.requests` in turn (why: "One request, byte for byte" in
 * bench/README.md; wrk's own `-H` headers come out in another order in each wrk process).
 */
function writeRequestScript(spec: LoadSpec): { file: string; remove: () => void } {
  const requests = spec.requests ?? requestHeads(spec.url, spec.headers);
  // JSON's escapes of printable ASCII, \r and \n are Lua's too.
  if (!requests.every((r) => /^[\x20-\x7e\r\n]*$/.test(r)))
    throw new Error('bench requests are printable ASCII');
  const dir = mkdtempSync(join(tmpdir(), 'leadgate-wrk-'));
  const file = join(dir, 'request.lua');
  writeFileSync(
    file,
    `local rs = {${requests.map((r) => JSON.stringify(r)).join(', ')}}\nlocal i = 0\n` +
      `request = function() i = i % #rs + 1 return rs[i] end\n`,
  );
  return { file, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
