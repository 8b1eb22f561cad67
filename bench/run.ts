import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { leadDigest, signLeadToken } from '../src/client/index.js';
import { freePort } from '../test/helpers/optional.js';
import { hasRedis, launchRedis } from '../test/helpers/redis.js';
import { cpuMicros } from './cpu.js';
import { LIMITED_KEY, SECRET, SERVER_KEY, STOREFRONT_KEY, writeBenchConfig } from './fixture.js';
import { hasWrk, type LoadResult, runLoad } from './load.js';
import { median, middleHalf } from './median.js';
import { mixedRequests, recordedClients } from './mix/mix.js';
import { pinned, pinningNote, pinSelf } from './pin.js';
import { children, gentle, start, stopAll } from './process.js';
import { pipelineCost, seedRevocations } from './revocations.js';
import { type Beside, beside } from './side-by-side.js';

/**
 * `npm run bench`: everything on 127.0.0.1, one run, targets interleaved over several rounds.
 * BENCH_SECONDS (default 2), BENCH_ROUNDS (10), BENCH_WARMUP (5 runs per target),
 * BENCH_CONNECTIONS (50), BENCH_SCALE=0 skips scale runs;
 * BENCH_ONLY=<regex> keeps the targets it matches, with the bare proxy and (b) beside them, and
 * skips the latency and scale passes. BENCH_PROCESSES (3): how many processes serve each of the
 * rows the token and in-memory policy verdicts read (bare, (b), (b) + 1 policy), measured in turn.
 * BENCH_PRIME (1): seconds of load, not counted, on a process just before each counted run.
 * BENCH_MIX=1: the bare proxy and (b) also on the recorded clients' requests (mix/), side by side.
 */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 5);
const ONLY = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY, 'i') : null;
/** BENCH_MIX=1: the bare proxy and (b) again, on the recorded clients' requests (mix/), side by side. */
const MIX = process.env.BENCH_MIX === '1' ? recordedClients() : null;
const PROCESSES = wholeNumber('BENCH_PROCESSES', 3);
const PRIME = Number(process.env.BENCH_PRIME ?? 1);

/** An environment variable that must hold a whole number of at least 1 (`fallback` when unset). */
function wholeNumber(name: string, fallback: number): number {
  const text = process.env[name];
  if (text === undefined) return fallback;
  if (!/^[1-9][0-9]*$/.test(text)) throw new Error(`${name} must be a whole number of at least 1`);
  return Number(text);
}
const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));
const MAIN = here('../src/main.js');

function startNginx(upstreamPort: number): Promise<{ port: number; pid: number }> | null {
  try {
    execFileSync('nginx', ['-v'], { stdio: 'ignore' });
  } catch {
    process.stderr.write('  nginx not installed: its row is left out (Debian: nginx-light)\n');
    return null;
  }
  const dir = mkdtempSync(join(tmpdir(), 'leadgate-nginx-'));
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  writeFileSync(
    join(dir, 'nginx.conf'),
    `worker_processes 1; daemon off; pid ${dir}/nginx.pid; error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log ${dir}/access.log;
  upstream up { server 127.0.0.1:${upstreamPort}; keepalive 64; }
  server { listen 127.0.0.1:${port}; location / {
    proxy_pass http://up; proxy_http_version 1.1; proxy_set_header Connection ""; } }
}
`,
  );
  const [command, args] = pinned('measured', 'nginx', ['-p', dir, '-c', join(dir, 'nginx.conf')]);
  const child = spawn(command, args, { stdio: 'ignore' });
  children.push(child);
  gentle.add(child);
  return new Promise((resolve) => setTimeout(() => resolve({ port, pid: child.pid ?? 0 }), 500));
}

/** A redis-server of the bench's own (test/helpers/redis.ts's), or null when it is not installed. */
async function startRedisServer(): Promise<{ port: number; pid: number } | null> {
  if (!hasRedis) return null;
  const port = await freePort();
  const child = await launchRedis(port, (command, args) => pinned('load', command, args));
  children.push(child);
  return { port, pid: child.pid ?? 0 };
}

interface Target {
  readonly name: string;
  readonly port: number;
  /** The process serving it: its CPU (and its children's) is read around each run. */
  readonly pid: number;
  /**
   * More processes serving the same, started the same way: round r measures process r mod n.
   * One process can sit a few µs per request above or below another of the same build for its
   * whole life (where its heap and code landed, what V8 compiled), so a verdict row is not left to
   * one process's luck.
   */
  readonly also?: ReadonlyArray<{ readonly port: number; readonly pid: number }>;
  readonly path: string;
  headers(): Record<string, string>;
  /** The bare proxy its CPU over bare is read against. */
  readonly base: string;
  readonly expectStatus?: number;
  /** Another process whose CPU per request is reported beside (Redis for the Redis row). */
  readonly sidePid?: number;
  /**
   * A row measured on this target's own process, with other headers, in slices alternated with
   * this target's (A B B A, then B A A B): the difference of the two is then the same process's,
   * at the same seconds. See {@link abba}.
   */
  readonly control?: { readonly name: string; headers(): Record<string, string> };
  /** Sent the recorded clients' requests in turn (mix/) instead of one fixed request. */
  readonly mix?: true;
}

interface Measured {
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  /** CPU the serving process spent per request served, µs (median of the rounds). */
  readonly cpuUs: number;
  /** The same, round by round: differences are taken within a round (paired), then the median. */
  readonly cpuRounds: readonly number[];
  readonly sideCpuUs: number;
  readonly errors: number;
}

async function once(t: Target, connections: number, seconds: number) {
  const before = cpuMicros(t.pid);
  const sideBefore = t.sidePid === undefined ? 0 : cpuMicros(t.sidePid);
  const r = await runLoad({
    url: `http://127.0.0.1:${t.port}${t.path}`,
    headers: t.headers(),
    ...(t.mix && MIX !== null
      ? { requests: mixedRequests(MIX, { host: `127.0.0.1:${t.port}`, apikey: STOREFRONT_KEY, token }) }
      : {}),
    connections,
    seconds,
  });
  const side = t.sidePid === undefined ? 0 : cpuMicros(t.sidePid) - sideBefore;
  return { ...r, cpuUs: (cpuMicros(t.pid) - before) / r.requests, sideCpuUs: side / r.requests };
}

type Run = LoadResult & { cpuUs: number; sideCpuUs: number };

/** A target's processes: its own, then its `also`, each as a target of its own. */
const processes = (t: Target): Target[] => [t, ...(t.also ?? []).map((p) => ({ ...t, ...p }))];

/**
 * `t` and its control on `t`'s process in four slices of half a round each, A B B A (B A A B in
 * even rounds), each side's CPU summed over its two slices. A pair measured on two processes keeps
 * the processes' difference (up to ~10 µs per request for their whole life) and the host's swing
 * between their runs; here neither is in the difference.
 */
async function abba(
  t: Target,
  control: NonNullable<Target['control']>,
  round: number,
  connections: number,
  seconds: number,
): Promise<Array<[string, Run]>> {
  const sides = { main: t, control: { ...t, headers: control.headers } };
  const order =
    round % 2 === 1
      ? (['main', 'control', 'control', 'main'] as const)
      : (['control', 'main', 'main', 'control'] as const);
  const slices = { main: [] as Run[], control: [] as Run[] };
  const slice = Math.max(1, Math.round(seconds / 2));
  for (const side of order) slices[side].push(await once(sides[side], connections, slice));
  return [
    [t.name, combined(slices.main)],
    [control.name, combined(slices.control)],
  ];
}

/** Slices of one side as one run: CPU and requests summed, latencies the median of the slices'. */
function combined(rs: readonly Run[]): Run {
  const requests = rs.reduce((a, r) => a + r.requests, 0);
  const weighted = (f: (r: Run) => number) => rs.reduce((a, r) => a + f(r) * r.requests, 0) / requests;
  return {
    rps: median(rs.map((r) => r.rps)),
    requests,
    p50: median(rs.map((r) => r.p50)),
    p99: median(rs.map((r) => r.p99)),
    errors: rs.reduce((a, r) => a + r.errors, 0),
    cpuUs: weighted((r) => r.cpuUs),
    sideCpuUs: weighted((r) => r.sideCpuUs),
  };
}

/** Every target once per round, interleaved, after a warm-up; medians over the rounds. */
async function measure(
  targets: Target[],
  rounds: number,
  seconds: number,
  connections: number,
  warmup = WARMUP,
) {
  const runs = new Map<string, Run[]>(
    targets.flatMap((t) => [t.name, ...(t.control ? [t.control.name] : [])]).map((n) => [n, []]),
  );
  // Warm-up: WARMUP load runs per target, each with new connections as the rounds have. V8
  // deoptimises and recompiles the request path the first times a run's connections close
  // mid-request (--trace-opt, token path: 840 ms compiling in the first 2-s run, 50–170 ms in
  // runs 6 to 9, then little): counted before, that was noise of several µs per request.
  for (let i = 0; i < warmup; i++)
    for (const t of targets) for (const p of processes(t)) await once(p, connections, seconds);
  for (let round = 1; round <= rounds; round++) {
    for (const t of targets) {
      const all = processes(t);
      const p = all[(round - 1) % all.length] as Target;
      // Idle since its last run, V8 has shrunk the heap and may have dropped compiled code: a short
      // run, not counted, brings the process back to its steady state first.
      if (PRIME > 0) await once(p, connections, PRIME);
      const measured: Array<[string, Run]> = t.control
        ? await abba(p, t.control, round, connections, seconds)
        : [[t.name, await once(p, connections, seconds)]];
      for (const [name, r] of measured) {
        runs.get(name)?.push(r);
        process.stderr.write(
          `  round ${round} ${name.padEnd(36)} ${String(Math.round(r.rps)).padStart(6)} req/s ${r.cpuUs.toFixed(1).padStart(6)} µs CPU/req\n`,
        );
      }
    }
  }
  return new Map(
    [...runs.keys()].map((name): [string, Measured] => {
      const rs = runs.get(name) ?? [];
      return [
        name,
        {
          rps: median(rs.map((r) => r.rps)),
          p50: median(rs.map((r) => r.p50)),
          p99: median(rs.map((r) => r.p99)),
          cpuUs: median(rs.map((r) => r.cpuUs)),
          cpuRounds: rs.map((r) => r.cpuUs),
          sideCpuUs: median(rs.map((r) => r.sideCpuUs)),
          errors: rs.reduce((a, r) => a + r.errors, 0),
        },
      ];
    }),
  );
}

const serve = (config: string) => start([MAIN, 'serve', '--config', config]);
const API = '/api/v2/merchant/orders';

const BARE = 'bare undici proxy (Pool.stream, 15 lines)';
const BARE_HP = 'bare proxy: http-proxy';
const BARE_LOG = 'bare undici + 1 log line + 1 header';
const TOKEN_PATH = 'leadgate (b) STOREFRONT + token';
const REVOKED = 'leadgate (b), 10,000 leads + 1,000 keys revoked';
const TRACED = 'leadgate (b), tracing on, 1 % sampled';
const LIMITED = 'leadgate (b) + 1 rate-limit policy, in memory';
const LIMITED_CONTROL = "leadgate (b), the policy's process, a key it does not name";
const LIMITED_REDIS = 'leadgate (b) + 1 rate-limit policy, on Redis';
const WORKERS_2 = 'leadgate (b), workers: 2';
const TRACED_ALL = 'leadgate (b), tracing on, every request sampled';
const BARE_MIX = 'bare undici proxy, mixed clients';
const TOKEN_MIX = 'leadgate (b) STOREFRONT + token, mixed clients';
const token = signLeadToken(SECRET, 'lead-1');
const serverHeaders = () => ({ 'x-apikey': SERVER_KEY, 'x-source': 'web' });
const storefrontHeaders = () => ({ 'x-apikey': STOREFRONT_KEY, 'x-source': 'web', 'x-leadtoken': token });
const limitedHeaders = () => ({ 'x-apikey': LIMITED_KEY, 'x-source': 'web', 'x-leadtoken': token });
const digestHeaders = () => {
  const ts = Math.floor(Date.now() / 1000);
  return {
    'x-apikey': STOREFRONT_KEY,
    'x-source': 'web',
    'x-timestamp': String(ts),
    'x-leaddigest': leadDigest(SECRET, 'cust-1', ts),
  };
};

const NGINX = 'nginx (1 worker, keepalive)';

type Proc = { port: number; child?: ChildProcess; pid?: number };

/** What the rows start their processes from: each started once, on first use, then shared. */
function context() {
  const once = <T>(f: () => Promise<T>) => {
    let p: Promise<T> | undefined;
    return () => (p ??= f());
  };
  const upstream = once(() => start([here('./upstream.js')], {}, 'load'));
  const config = async (o: Omit<Parameters<typeof writeBenchConfig>[0], 'upstreamPort'>) =>
    writeBenchConfig({ upstreamPort: (await upstream()).port, ...o });
  const collector = once(() => start([here('./otlp-sink.js')], {}, 'load'));
  const redis = once(async () => {
    const r = await startRedisServer();
    if (r === null)
      process.stderr.write('  redis-server not installed: its rows are left out (Debian: redis-server)\n');
    // the revoked row's set: 10,000 leads and 1,000 keys, loaded from Redis
    else await seedRevocations(r.port, { leads: 10_000, keys: 1_000 });
    return r;
  });
  /** A bench proxy of its own, `args` given the upstream's port. */
  const node = async (file: string, args: (port: string) => string[] = (p) => [p]) =>
    start([here(file), ...args(String((await upstream()).port))]);
  const lg = async (o: Partial<Omit<Parameters<typeof writeBenchConfig>[0], 'upstreamPort'>> = {}) =>
    serve(await config({ engine: 'undici', ...o }));
  const traced = async (ratio: number) =>
    lg({ tracing: { endpoint: `http://127.0.0.1:${(await collector()).port}/v1/traces`, ratio } });
  const withRedis = async (f: (port: number) => Promise<Proc>) => {
    const r = await redis();
    return r === null ? null : f(r.port);
  };
  // (a), (c) and (d) share one process; (b)'s processes serve (b) alone, all alike
  const abcd = once(() => lg());
  return { upstream, redis, config, node, lg, abcd, traced, withRedis };
}
type Context = ReturnType<typeof context>;

/**
 * The bench's targets, one row each: its name, how its process is started (null: what it needs
 * is not installed, the row is left out), the request it is sent, and the bare proxy its CPU is
 * read against. `processes`: the row is served by BENCH_PROCESSES processes started alike, one per
 * round in turn. Rows in the order they are measured in a round: the pairs the verdicts read next
 * to each other (bare, (b), then what is compared with (b)), the rest after them.
 */
interface Row {
  readonly name: string;
  readonly start: (c: Context) => Promise<Proc | null>;
  readonly path?: string;
  readonly headers?: () => Record<string, string>;
  readonly base?: string;
  readonly processes?: true;
  /** Only with BENCH_MIX=1: sent the recorded clients' requests. */
  readonly mix?: true;
  readonly expectStatus?: number;
  readonly control?: Target['control'];
  /** Another process whose CPU per request is reported beside. */
  readonly side?: (c: Context) => Promise<{ pid: number } | null>;
}

const storefront = { headers: () => storefrontHeaders() };

const ROWS: readonly Row[] = [
  { name: BARE, start: (c) => c.node('./bare-undici.js'), processes: true },
  { name: TOKEN_PATH, start: (c) => c.lg(), ...storefront, processes: true },
  {
    name: REVOKED,
    start: (c) => c.withRedis((port) => c.lg({ revocationsRedisPort: port })),
    ...storefront,
    processes: true,
  },
  {
    name: LIMITED,
    start: (c) => c.lg({ rateLimit: { redisPort: null, limitedKeyOnly: true } }),
    headers: () => limitedHeaders(),
    processes: true,
    control: { name: LIMITED_CONTROL, headers: () => storefrontHeaders() },
  },
  { name: TRACED, start: (c) => c.traced(0.01), ...storefront },
  {
    name: LIMITED_REDIS,
    start: (c) => c.withRedis((port) => c.lg({ rateLimit: { redisPort: port } })),
    ...storefront,
    side: (c) => c.redis(),
  },
  { name: BARE_MIX, start: (c) => c.node('./bare-undici.js'), processes: true, mix: true, base: BARE_MIX },
  { name: TOKEN_MIX, start: (c) => c.lg(), ...storefront, processes: true, mix: true, base: BARE_MIX },
  { name: 'upstream direct', start: (c) => c.upstream() },
  { name: NGINX, start: async (c) => startNginx((await c.upstream()).port) },
  { name: BARE_LOG, start: (c) => c.node('./bare-undici.js', (p) => [p, 'log']) },
  {
    name: 'bare proxy: leadgate undici engine',
    start: (c) => c.node('./bare-proxy.js', (p) => ['undici', p]),
  },
  { name: BARE_HP, start: (c) => c.node('./bare-proxy.js', (p) => ['http-proxy', p]), base: BARE_HP },
  { name: 'leadgate (a) READ SERVER', start: (c) => c.abcd(), headers: () => serverHeaders() },
  {
    name: 'leadgate (c) lookup with digest',
    start: (c) => c.abcd(),
    path: '/api/v2/merchant/leads/x?customer_id=cust-1',
    headers: () => digestHeaders(),
  },
  {
    name: 'leadgate (d) refused (no key)',
    start: (c) => c.abcd(),
    headers: () => ({ 'x-source': 'web' }),
    expectStatus: 401,
  },
  {
    name: 'leadgate (b), log.requests: errors',
    start: (c) => c.lg({ logRequests: 'errors' }),
    ...storefront,
  },
  {
    name: 'leadgate (b) on http-proxy',
    start: (c) => c.lg({ engine: 'http-proxy' }),
    ...storefront,
    base: BARE_HP,
  },
  // two workers on one core would say nothing: this one runs on every core
  {
    name: WORKERS_2,
    start: async (c) =>
      start([MAIN, 'serve', '--config', await c.config({ engine: 'undici', workers: 2 })], {}, 'free'),
    ...storefront,
  },
  { name: TRACED_ALL, start: (c) => c.traced(1), ...storefront },
];

/** The processes under test (the rows ONLY keeps, with bare and (b)), and the requests they are sent. */
async function startTargets(): Promise<{ targets: Target[]; upstreamPort: number }> {
  const c = context();
  const at = (p: Proc) => ({ port: p.port, pid: p.pid ?? p.child?.pid ?? 0 });
  const targets: Target[] = [];
  for (const row of ROWS) {
    if (ONLY !== null && row.name !== BARE && row.name !== TOKEN_PATH && !ONLY.test(row.name)) continue;
    if (row.mix && MIX === null) continue;
    const first = await row.start(c);
    if (first === null) continue;
    const also: Array<{ port: number; pid: number }> = [];
    for (let i = 1; row.processes && i < PROCESSES; i++) {
      const p = await row.start(c);
      if (p !== null) also.push(at(p));
    }
    const side = await row.side?.(c);
    targets.push({
      name: row.name,
      ...at(first),
      path: row.path ?? API,
      headers: row.headers ?? (() => ({})),
      base: row.base ?? BARE,
      ...(also.length > 0 ? { also } : {}),
      ...(row.mix ? { mix: true } : {}),
      ...(row.expectStatus === undefined ? {} : { expectStatus: row.expectStatus }),
      ...(row.control === undefined ? {} : { control: row.control }),
      ...(side == null ? {} : { sidePid: side.pid }),
    });
  }
  return { targets, upstreamPort: (await c.upstream()).port };
}

/**
 * The median over the rounds of `a − b`, each round's pair measured a few seconds apart: slow
 * swings of a shared machine cancel out in the pair (the difference of two medians keeps them).
 */
export function pairedOver(a: Measured | undefined, b: Measured | undefined): number {
  return median(pairedDiffs(a, b));
}

/** `a − b`, round by round. */
function pairedDiffs(a: Measured | undefined, b: Measured | undefined): number[] {
  if (a === undefined || b === undefined) return [];
  return a.cpuRounds.map((x, i) => x - (b.cpuRounds[i] ?? Number.NaN));
}

/**
 * How a verdict's rounds spread: the lowest, the highest and the middle half of its per-round
 * differences. When the middle half lies on both sides of the target, which side the median
 * falls on is as much the host's doing in that run as the code's, and the line says so. With no
 * target (bare beside bare), the spread alone.
 */
function spreadOf(rounds: readonly number[], target?: number): string {
  const diffs = rounds.filter(Number.isFinite);
  if (diffs.length < 2) return `${diffs.length === 0 ? 'no rounds' : 'one round'}, no spread`;
  const [q1, q3] = middleHalf(diffs);
  const f = (x: number) => `${x >= 0 ? '+' : ''}${x.toFixed(1)}`;
  const text = `rounds ${f(Math.min(...diffs))} to ${f(Math.max(...diffs))}, middle half ${f(q1)} to ${f(q3)}`;
  return target !== undefined && q1 <= target && target < q3
    ? `${text}: the middle half lies on both sides of the target, so this run does not settle it`
    : text;
}

function rowsOf(targets: Target[], results: Map<string, Measured>) {
  const nginx = results.get(NGINX);
  const withControls = targets.flatMap((t) => (t.control ? [t, { ...t, ...t.control }] : [t]));
  return withControls.map((t) => {
    const r = results.get(t.name);
    const base = results.get(t.base);
    return {
      target: t.name,
      rps: Math.round(r?.rps ?? 0),
      p50_us: Math.round(r?.p50 ?? 0),
      p99_us: Math.round(r?.p99 ?? 0),
      cpu_us_per_request: Number((r?.cpuUs ?? 0).toFixed(1)),
      cpu_us_over_bare: Number(pairedOver(r, base).toFixed(1)),
      rps_vs_bare: Number(((r?.rps ?? 0) / (base?.rps ?? Number.NaN)).toFixed(2)),
      rps_vs_nginx: Number(((r?.rps ?? 0) / (nginx?.rps ?? Number.NaN)).toFixed(2)),
      unexpected_errors: t.expectStatus === undefined ? (r?.errors ?? 0) : 0,
      ...(t.sidePid === undefined ? {} : { side_cpu_us_per_request: Number((r?.sideCpuUs ?? 0).toFixed(1)) }),
    };
  });
}

/** The token verdict's own rounds (side-by-side.ts): (b) beside bare, then bare beside bare. */
async function besideRuns(targets: Target[]) {
  const sides = (name: string): Target[] => {
    const t = targets.find((x) => x.name === name);
    return t === undefined ? [] : processes(t);
  };
  const bare = sides(BARE);
  const token = sides(TOKEN_PATH);
  if (bare.length === 0 || token.length === 0) return null;
  process.stderr.write('side by side: (b) beside bare, then bare beside bare\n');
  const run = (t: Target, seconds: number) => once(t, CONNECTIONS, seconds);
  const o = { rounds: ROUNDS, seconds: SECONDS, prime: PRIME };
  const [bareMix, tokenMix] = [sides(BARE_MIX), sides(TOKEN_MIX)];
  return {
    token: await beside(bare, token, run, { ...o, name: '(b) beside bare' }),
    bare: await beside(bare, bare, run, { ...o, name: 'bare beside bare', distinct: true }),
    mixed:
      bareMix.length === 0 || tokenMix.length === 0
        ? null
        : await beside(bareMix, tokenMix, run, { ...o, name: '(b) beside bare, mixed clients' }),
  };
}

/** At one connection: what leadgate and the bare proxy add to the direct round trip. */
async function latencyPass(targets: Target[]) {
  process.stderr.write('latency pass: 1 connection\n');
  const pick = (name: string) => targets.find((t) => t.name === name) as Target;
  const single = await measure(
    [pick('upstream direct'), pick(BARE), pick(BARE_LOG), pick(TOKEN_PATH)],
    ROUNDS,
    Math.max(3, Math.round(SECONDS / 2)),
    1,
    1,
  );
  const direct = single.get('upstream direct');
  const added = (name: string) => ({
    p50_us: Math.round((single.get(name)?.p50 ?? 0) - (direct?.p50 ?? 0)),
    p99_us: Math.round((single.get(name)?.p99 ?? 0) - (direct?.p99 ?? 0)),
  });
  return { leadgate: added(TOKEN_PATH), bare: added(BARE), bareLog: added(BARE_LOG) };
}

async function scaleRuns(upstreamPort: number, bareRps: number) {
  const scale: Array<Record<string, number | string>> = [];
  process.stderr.write('scale runs: (b) with many keys and a long origin_ips list\n');
  for (const [label, extraKeys, originIps] of [
    ['10 keys', 8, 0],
    ['10,000 keys', 9_998, 0],
    ['100,000 keys', 99_998, 0],
    ['1,000 origin_ips on the key', 0, 1000],
  ] as const) {
    const g = await serve(writeBenchConfig({ upstreamPort, engine: 'undici', extraKeys, originIps }));
    const target = {
      name: label,
      port: g.port,
      pid: g.child.pid ?? 0,
      path: API,
      headers: storefrontHeaders,
      base: BARE,
    };
    const r = (await measure([target], 1, SECONDS, CONNECTIONS, 1)).get(label);
    g.child.kill('SIGKILL');
    scale.push({
      run: label,
      rps: Math.round(r?.rps ?? 0),
      cpu_us_per_request: Number((r?.cpuUs ?? 0).toFixed(1)),
      rps_vs_bare: Number(((r?.rps ?? 0) / bareRps).toFixed(2)),
    });
  }
  const [command, args] = pinned('free', process.execPath, [
    '--expose-gc',
    here('./config-load.js'),
    '100000',
  ]);
  const load = JSON.parse(execFileSync(command, args, { encoding: 'utf8' })) as Record<string, number>;
  scale.push({
    run: 'config load, 100,000 keys',
    load_ms: load.load_ms ?? 0,
    heap_bytes_per_key: load.heap_bytes_per_key ?? 0,
  });
  return scale;
}

/** The token path's target: at most this many µs of CPU per request over the bare undici proxy. */
const TOKEN_TARGET_US = 10;
const met = (over: number) => (over <= TOKEN_TARGET_US ? 'met' : 'not met');

/**
 * The token path's verdict: from the side-by-side rounds when there are some (the host's swings
 * cancel there), with bare beside bare for what the method itself reads; then the table's figure,
 * each row measured alone in turn, with its spread.
 */
function printTokenVerdict(
  b: ReturnType<typeof rowsOf>[number],
  results: Map<string, Measured>,
  besides: Besides,
) {
  const alone = spreadOf(pairedDiffs(results.get(TOKEN_PATH), results.get(BARE)), TOKEN_TARGET_US);
  const token = besides?.token;
  if (token == null || token.diffs.length === 0) {
    console.log(
      `\nverdict (CPU, the steady figure): the token path costs ${b.cpu_us_per_request} µs CPU per request, ` +
        `${b.cpu_us_over_bare} µs above the bare undici proxy (target ≤ ${TOKEN_TARGET_US} µs: ${met(b.cpu_us_over_bare)}); ${alone}`,
    );
    return;
  }
  const over = Number(median(token.diffs).toFixed(1));
  const aa = besides?.bare;
  const calibration =
    aa == null ? '' : `; bare beside bare ${median(aa.diffs).toFixed(1)} µs (${spreadOf(aa.diffs)})`;
  const errors = token.errors + (aa?.errors ?? 0);
  console.log(
    `\nverdict (CPU, the steady figure): the token path costs ${over} µs CPU per request above the bare undici proxy, ` +
      `the two measured side by side (target ≤ ${TOKEN_TARGET_US} µs: ${met(over)}; ${spreadOf(token.diffs, TOKEN_TARGET_US)})${calibration}` +
      `${errors > 0 ? `; ${errors} unexpected answers or socket errors` : ''}`,
  );
  console.log(
    `the same, each measured alone in turn (the table): ${b.cpu_us_per_request} µs CPU per request, ${b.cpu_us_over_bare} µs above bare; ${alone}`,
  );
}

type Besides = Awaited<ReturnType<typeof besideRuns>>;

function print(report: {
  rows: ReturnType<typeof rowsOf>;
  results: Map<string, Measured>;
  beside: Besides;
  latency: Awaited<ReturnType<typeof latencyPass>> | null;
  scale: Array<Record<string, number | string>>;
  machine: { cores: number; cpu: string; node: string };
}) {
  console.log(
    '\n| target | req/s | p50 µs | p99 µs | CPU µs/req | CPU over bare | req/s ÷ bare | ÷ nginx |\n|---|---|---|---|---|---|---|---|',
  );
  for (const r of report.rows)
    console.log(
      `| ${r.target} | ${r.rps} | ${r.p50_us} | ${r.p99_us} | ${r.cpu_us_per_request} | ${r.target.startsWith('leadgate') ? `**${r.cpu_us_over_bare}**` : r.cpu_us_over_bare} | ${r.rps_vs_bare} | ${r.rps_vs_nginx} |`,
    );
  if (report.latency !== null) {
    const { leadgate, bare, bareLog } = report.latency;
    console.log(
      `\nadded latency over direct, 1 connection (p50 / p99 µs): leadgate (b) ${leadgate.p50_us} / ${leadgate.p99_us}; ` +
        `bare undici ${bare.p50_us} / ${bare.p99_us}; bare undici + log line + header ${bareLog.p50_us} / ${bareLog.p99_us}`,
    );
  }
  if (report.scale.length > 0) {
    console.log('\n| scale run | result |\n|---|---|');
    for (const s of report.scale)
      console.log(
        `| ${s.run} | ${Object.entries(s)
          .filter(([k]) => k !== 'run')
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')} |`,
      );
  }
  const b = report.rows.find((r) => r.target === TOKEN_PATH);
  if (b !== undefined) printTokenVerdict(b, report.results, report.beside);
  const mixed = report.beside?.mixed;
  if (mixed != null && MIX !== null) {
    const over = Number(median(mixed.diffs).toFixed(1));
    console.log(
      `mixed clients (${MIX.clients.map((c) => c.client).join(', ')}; recorded ${MIX.recorded}): the token path costs ${over} µs CPU per request above the bare undici proxy on the same mix, side by side ` +
        `(target ≤ ${TOKEN_TARGET_US} µs: ${met(over)}; ${spreadOf(mixed.diffs, TOKEN_TARGET_US)})${mixed.errors > 0 ? `; ${mixed.errors} unexpected answers or socket errors` : ''}`,
    );
  }
  const over = (name: string) => {
    const r = report.results.get(name);
    return r === undefined || b === undefined
      ? null
      : Number(pairedOver(r, report.results.get(TOKEN_PATH)).toFixed(1));
  };
  const traced = over(TRACED);
  if (traced !== null)
    console.log(
      `tracing: on at 1 % costs ${traced} µs CPU per request over (b) with tracing off (target ≤ 5 µs: ${traced <= 5 ? 'met' : 'not met'}); ` +
        `every request sampled: ${over(TRACED_ALL)} µs`,
    );
  const revokedOver = over(REVOKED);
  if (revokedOver !== null) {
    // the lookups themselves, in process: over HTTP the rounds swing by more than the target
    const inProcess = pipelineCost(storefrontHeaders(), API);
    console.log(
      `revocation: a set of 10,000 leads and 1,000 keys costs ${revokedOver} µs CPU per request on the token path over (b) with none, paired by round over HTTP; ` +
        `in the §3 pipeline itself ${inProcess.over_ns} ns per request (${inProcess.a_ns} ns without, ${inProcess.b_ns} ns with; A B B A, median of 10 rounds) (target ≤ 1 µs: ${inProcess.over_ns <= 1000 ? 'met' : 'not met'})`,
    );
  }
  const limited = report.results.get(LIMITED);
  const control = report.results.get(LIMITED_CONTROL);
  if (limited !== undefined && control !== undefined) {
    const memory = Number(pairedOver(limited, control).toFixed(1));
    console.log(
      `rate limits: one policy in memory costs ${memory} µs CPU per request over (b) on the same processes, A B B A (target ≤ 3 µs: ${memory <= 3 ? 'met' : 'not met'}; ` +
        `${spreadOf(pairedDiffs(limited, control), 3)}); ${over(LIMITED)} µs over (b)'s own processes, paired by round`,
    );
  }
  const onRedis = over(LIMITED_REDIS);
  const redisRow = report.rows.find((r) => r.target === LIMITED_REDIS);
  if (onRedis !== null)
    console.log(
      `rate limits: one policy on Redis costs ${onRedis} µs CPU per request in leadgate over (b) (target ≤ 15 µs: ${onRedis <= 15 ? 'met' : 'not met'}), ` +
        `and ${redisRow?.side_cpu_us_per_request ?? '?'} µs in redis-server`,
    );
  const w2 = report.rows.find((r) => r.target === WORKERS_2);
  if (w2 !== undefined && b !== undefined)
    console.log(
      `workers: 2 serve ${w2.rps} req/s against ${b.rps} for one process (×${(w2.rps / b.rps).toFixed(2)}), ${w2.cpu_us_per_request} µs CPU per request (primary and workers) against ${b.cpu_us_per_request}`,
    );
  console.log(
    `${hasWrk ? 'wrk' : 'autocannon'}, ${report.machine.cores} cores (${report.machine.cpu}), node ${report.machine.node}, ${ROUNDS} rounds × ${SECONDS} s, differences paired by round (the token verdict's rounds side by side); ` +
      `bare, (b) and (b) + 1 in-memory policy each served by ${PROCESSES} processes in turn; ${pinningNote}; JSON in bench/results/latest.json`,
  );
}

/** The side-by-side rounds as latest.json keeps them. */
function besideJson(b: NonNullable<Besides>) {
  const of = (x: Beside | null) =>
    x === null
      ? null
      : {
          median_us: Number(median(x.diffs).toFixed(1)),
          rounds_us: x.diffs.map((d) => Number(d.toFixed(1))),
          errors: x.errors,
        };
  return {
    token_over_bare: of(b.token),
    bare_beside_bare: of(b.bare),
    ...(b.mixed === null ? {} : { token_over_bare_mixed_clients: of(b.mixed) }),
  };
}

async function main() {
  pinSelf();
  process.stderr.write(
    `leadgate bench: ${hasWrk ? 'wrk' : 'autocannon (install Debian wrk for the reference numbers)'}, ${cpus().length} cores, ${ROUNDS}×${SECONDS}s, ${CONNECTIONS} connections; ${pinningNote}\n`,
  );
  const { targets, upstreamPort } = await startTargets();
  const results = await measure(targets, ROUNDS, SECONDS, CONNECTIONS);
  const rows = rowsOf(targets, results);
  const besides = await besideRuns(targets);
  const latency = ONLY === null ? await latencyPass(targets) : null;
  const scale =
    process.env.BENCH_SCALE === '0' || ONLY !== null
      ? []
      : await scaleRuns(upstreamPort, results.get(BARE)?.rps ?? 0);
  const machine = { cores: cpus().length, cpu: cpus()[0]?.model ?? 'unknown', node: process.version };
  const report = {
    when: new Date().toISOString(),
    machine,
    load: {
      tool: hasWrk ? 'wrk' : 'autocannon',
      connections: CONNECTIONS,
      seconds: SECONDS,
      rounds: ROUNDS,
      processes_per_verdict_row: PROCESSES,
      pinned: pinningNote,
    },
    rows,
    side_by_side: besides === null ? null : besideJson(besides),
    latency_added_over_direct: latency,
    scale,
  };
  mkdirSync(here('../../bench/results'), { recursive: true });
  writeFileSync(here('../../bench/results/latest.json'), `${JSON.stringify(report, null, 2)}\n`);
  print({ rows, results, beside: besides, latency, scale, machine });
}

process.on('exit', stopAll);
main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(stopAll);
