import { cpus } from 'node:os';
import { leadDigest } from '../src/client/index.js';
import { freePort } from '../test/helpers/optional.js';
import { hasRedis, launchRedis } from '../test/helpers/redis.js';
import {
  API,
  LIMITED_KEY,
  SECRET,
  SERVER_KEY,
  STOREFRONT_KEY,
  TOKEN,
  tokenHeaders,
  writeBenchConfig,
} from './fixture.js';
import { median, met, middleHalf, signed } from './median.js';
import { recordedClients } from './mix/mix.js';
import { startNginx } from './nginx.js';
import { pinned, pinningNote, pinSelf, type Role } from './pin.js';
import { benchFile, children, machine, num, runBench, serve, start, startUpstream } from './process.js';
import { pipelineCost, seedRevocations } from './revocations.js';
import { type Measured, measure, once, type Proc, processes, type Target } from './rounds.js';
import { type Beside, beside } from './side-by-side.js';
import { writeResults } from './worktree.js';

/**
 * `npm run bench`: everything on 127.0.0.1, one run, targets interleaved over several rounds.
 * BENCH_SECONDS (default 2), BENCH_ROUNDS (10), BENCH_WARMUP (5 runs per target),
 * BENCH_CONNECTIONS (50); BENCH_ONLY=<regex> keeps the targets it matches, with the bare proxy, (b)
 * and the bare proxy that logs beside them, and skips the latency pass. BENCH_PROCESSES (3): how
 * many processes serve each of the rows the verdicts read, measured in turn. BENCH_PRIME (1):
 * seconds of load, not counted, on a process just before each counted run. BENCH_MIX=1: the bare
 * proxies and (b) also on the recorded clients' requests (mix/), side by side.
 */
const SECONDS = num('BENCH_SECONDS', 2);
const ROUNDS = num('BENCH_ROUNDS', 10);
const CONNECTIONS = num('BENCH_CONNECTIONS', 50);
const PROCESSES = num('BENCH_PROCESSES', 3);
const PRIME = num('BENCH_PRIME', 1);
const ONLY = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY, 'i') : null;
const MIX = process.env.BENCH_MIX === '1' ? recordedClients() : null;
if (!Number.isInteger(PROCESSES) || PROCESSES < 1)
  throw new Error('BENCH_PROCESSES must be a whole number of at least 1');
const ROUND_OPTIONS = { rounds: ROUNDS, seconds: SECONDS, connections: CONNECTIONS, prime: PRIME };

const BARE = 'bare undici proxy (Pool.stream, 15 lines)';
const BARE_HP = 'bare proxy: http-proxy';
const BARE_LOG = 'bare undici + 1 log line + 1 header';
const BARE_LOG_MIX = 'bare undici + 1 log line + 1 header, mixed clients';
const DIRECT = 'upstream direct';
const NGINX = 'nginx (1 worker, keepalive)';
const TOKEN_PATH = 'leadgate (b) STOREFRONT + token';
const LOG_ERRORS = 'leadgate (b), log.requests: errors';
const REVOKED = 'leadgate (b), 10,000 leads + 1,000 keys revoked';
const TRACED = 'leadgate (b), tracing on, 1 % sampled';
const LIMITED = 'leadgate (b) + 1 rate-limit policy, in memory';
const LIMITED_CONTROL = "leadgate (b), the policy's process, a key it does not name";
const LIMITED_REDIS = 'leadgate (b) + 1 rate-limit policy, on Redis';
const WORKERS_2 = 'leadgate (b), workers: 2';
const TRACED_ALL = 'leadgate (b), tracing on, every request sampled';
const BARE_MIX = 'bare undici proxy, mixed clients';
const TOKEN_MIX = 'leadgate (b) STOREFRONT + token, mixed clients';
const serverHeaders = () => ({ 'x-apikey': SERVER_KEY, 'x-source': 'web' });
const digestHeaders = () => {
  const ts = Math.floor(Date.now() / 1000);
  const digest = leadDigest(SECRET, 'cust-1', ts);
  return { 'x-apikey': STOREFRONT_KEY, 'x-source': 'web', 'x-timestamp': String(ts), 'x-leaddigest': digest };
};

type BenchConfig = Partial<Omit<Parameters<typeof writeBenchConfig>[0], 'upstreamPort'>>;

/** What the rows start their processes from: each started once, on first use, then shared. */
function context() {
  const once = <T>(f: () => Promise<T>) => {
    let p: Promise<T> | undefined;
    return () => (p ??= f());
  };
  const upstream = once(startUpstream);
  const collector = once(() => start([benchFile('./otlp-sink.js')], {}, 'load'));
  const redis = once(async () => {
    if (!hasRedis) {
      process.stderr.write('  redis-server not installed: its rows are left out (Debian: redis-server)\n');
      return null;
    }
    const port = await freePort();
    const child = await launchRedis(port, (command, args) => pinned('load', command, args));
    children.push(child);
    // the revoked row's set: 10,000 leads and 1,000 keys, loaded from Redis
    await seedRevocations(port, { leads: 10_000, keys: 1_000 });
    return { port, pid: child.pid ?? 0 };
  });
  /** A bench proxy of its own, given the upstream's port. */
  const node = async (file: string, ...args: string[]) =>
    start([benchFile(file), ...args, String((await upstream()).port)]);
  const lg = async (o: BenchConfig = {}, role?: Role) =>
    serve(writeBenchConfig({ upstreamPort: (await upstream()).port, ...o }), { role });
  const traced = async (ratio: number) =>
    lg({ tracing: { endpoint: `http://127.0.0.1:${(await collector()).port}/v1/traces`, ratio } });
  const withRedis = async (o: (port: number) => BenchConfig) => {
    const r = await redis();
    return r === null ? null : lg(o(r.port));
  };
  // (a), (c) and (d) share one process; (b)'s processes serve (b) alone, all alike
  const abcd = once(() => lg());
  return { upstream, redis, node, lg, abcd, traced, withRedis };
}
type Context = ReturnType<typeof context>;

/**
 * The bench's targets, one row each: its name, how its process is started (null: what it needs
 * is not installed, the row is left out), the request it is sent (the orders path and no headers
 * unless said), and the bare proxy its CPU is read against (BARE unless said). `processes`: the
 * row is served by BENCH_PROCESSES processes started alike, one per round in turn. `mix`: only
 * with BENCH_MIX=1, sent the recorded clients' requests. `side`: another process whose CPU per
 * request is reported beside. Rows in the order they are measured in a round: the pairs the
 * verdicts read next to each other (bare, (b), then what is compared with (b)), the rest after.
 */
interface Row {
  readonly name: string;
  readonly start: (c: Context) => Promise<Proc | null>;
  readonly path?: string;
  readonly headers?: () => Record<string, string>;
  readonly base?: string;
  readonly processes?: true;
  readonly mix?: true;
  readonly expectStatus?: number;
  readonly control?: Target['control'];
  readonly side?: (c: Context) => Promise<Proc | null>;
}

const token = { headers: tokenHeaders };
const bareUndici = (c: Context) => c.node('./bare-undici.js');
const bareLogging = (c: Context) => c.node('./bare-undici.js', 'log');

const ROWS: readonly Row[] = [
  { name: BARE, start: bareUndici, processes: true },
  { name: TOKEN_PATH, start: (c) => c.lg(), ...token, processes: true },
  { name: BARE_LOG, start: bareLogging, processes: true },
  { name: REVOKED, start: (c) => c.withRedis((port) => ({ redisPort: port })), ...token, processes: true },
  {
    name: LIMITED,
    start: (c) => c.lg({ rateLimit: 'limited' }),
    headers: () => ({ 'x-apikey': LIMITED_KEY, 'x-source': 'web', 'x-leadtoken': TOKEN }),
    processes: true,
    control: { name: LIMITED_CONTROL, headers: tokenHeaders },
  },
  { name: TRACED, start: (c) => c.traced(0.01), ...token },
  {
    name: LIMITED_REDIS,
    start: (c) => c.withRedis((port) => ({ rateLimit: 'all', redisPort: port })),
    ...token,
    side: (c) => c.redis(),
  },
  { name: BARE_MIX, start: bareUndici, processes: true, mix: true, base: BARE_MIX },
  { name: TOKEN_MIX, start: (c) => c.lg(), ...token, processes: true, mix: true, base: BARE_MIX },
  { name: BARE_LOG_MIX, start: bareLogging, processes: true, mix: true, base: BARE_MIX },
  { name: DIRECT, start: (c) => c.upstream() },
  { name: NGINX, start: async (c) => startNginx((await c.upstream()).port) },
  { name: 'bare proxy: leadgate undici engine', start: (c) => c.node('./bare-proxy.js', 'undici') },
  { name: BARE_HP, start: (c) => c.node('./bare-proxy.js', 'http-proxy'), base: BARE_HP },
  { name: 'leadgate (a) READ SERVER', start: (c) => c.abcd(), headers: serverHeaders },
  {
    name: 'leadgate (c) lookup with digest',
    start: (c) => c.abcd(),
    path: '/api/v2/merchant/leads/x?customer_id=cust-1',
    headers: digestHeaders,
  },
  {
    name: 'leadgate (d) refused (no key)',
    start: (c) => c.abcd(),
    headers: () => ({ 'x-source': 'web' }),
    expectStatus: 401,
  },
  { name: LOG_ERRORS, start: (c) => c.lg({ logRequests: 'errors' }), ...token, processes: true },
  {
    name: 'leadgate (b) on http-proxy',
    start: (c) => c.lg({ engine: 'http-proxy' }),
    ...token,
    base: BARE_HP,
  },
  // two workers on one core would say nothing: this one runs on every core
  { name: WORKERS_2, start: (c) => c.lg({ workers: 2 }, 'free'), ...token },
  { name: TRACED_ALL, start: (c) => c.traced(1), ...token },
];

type BenchTarget = Target & { readonly base: string; readonly expectStatus?: number | undefined };

/** Kept whatever ONLY says: what the token verdict reads. */
const ALWAYS = new Set([BARE, TOKEN_PATH, BARE_LOG]);

/** The processes under test (the rows ONLY keeps, with {@link ALWAYS}), and the requests they are sent. */
async function startTargets(): Promise<BenchTarget[]> {
  const c = context();
  const targets: BenchTarget[] = [];
  for (const row of ROWS) {
    if (ONLY !== null && !ALWAYS.has(row.name) && !ONLY.test(row.name)) continue;
    if (row.mix && MIX === null) continue;
    const first = await row.start(c);
    if (first === null) continue;
    const also: Proc[] = [];
    for (let i = 1; row.processes && i < PROCESSES; i++) {
      const p = await row.start(c);
      if (p !== null) also.push(p);
    }
    targets.push({
      ...row,
      ...first,
      also,
      path: row.path ?? API,
      headers: row.headers ?? (() => ({})),
      base: row.base ?? BARE,
      mix: row.mix && (MIX ?? undefined),
      sidePid: (await row.side?.(c))?.pid,
    });
  }
  return targets;
}

/** `a − b`, round by round: each round's pair measured a few seconds apart. */
function pairedDiffs(a: Measured | undefined, b: Measured | undefined): number[] {
  if (a === undefined || b === undefined) return [];
  return a.cpuRounds.map((x, i) => x - (b.cpuRounds[i] ?? Number.NaN));
}

/**
 * The median over the rounds of `a − b`: slow swings of a shared machine cancel out in the pair
 * (the difference of two medians keeps them).
 */
const pairedOver = (a: Measured | undefined, b: Measured | undefined) => median(pairedDiffs(a, b));
const round1 = (x: number) => Number(x.toFixed(1));

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
  const text = `rounds ${signed(Math.min(...diffs))} to ${signed(Math.max(...diffs))}, middle half ${signed(q1)} to ${signed(q3)}`;
  return target !== undefined && q1 <= target && target < q3
    ? `${text}: the middle half lies on both sides of the target, so this run does not settle it`
    : text;
}

function rowsOf(targets: readonly BenchTarget[], results: Map<string, Measured>) {
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
      cpu_us_per_request: round1(r?.cpuUs ?? 0),
      cpu_us_over_bare: round1(pairedOver(r, base)),
      rps_vs_bare: Number(((r?.rps ?? 0) / (base?.rps ?? Number.NaN)).toFixed(2)),
      rps_vs_nginx: Number(((r?.rps ?? 0) / (nginx?.rps ?? Number.NaN)).toFixed(2)),
      unexpected_errors: t.expectStatus === undefined ? (r?.errors ?? 0) : 0,
      ...(t.sidePid === undefined ? {} : { side_cpu_us_per_request: round1(r?.sideCpuUs ?? 0) }),
    };
  });
}
type Rows = ReturnType<typeof rowsOf>;

/**
 * The verdicts' own rounds (side-by-side.ts): (b) beside bare, bare beside bare, (b) beside the bare
 * proxy that logs, and the same two pairs on the mixed clients.
 */
async function besideRuns(targets: readonly Target[]) {
  const sides = (name: string) => targets.filter((x) => x.name === name).flatMap(processes);
  const run = (t: Target, seconds: number) => once(t, CONNECTIONS, seconds);
  const pair = (a: string, b: string, name: string, distinct = false) => {
    const [as, bs] = [sides(a), sides(b)];
    return as.length === 0 || bs.length === 0
      ? null
      : beside(as, bs, run, { ...ROUND_OPTIONS, name, distinct });
  };
  process.stderr.write(
    'side by side: (b) beside each bare proxy, bare beside bare, (b) beside (b) without its log line\n',
  );
  return {
    token: await pair(BARE, TOKEN_PATH, '(b) beside bare'),
    bare: await pair(BARE, BARE, 'bare beside bare', true),
    logged: await pair(BARE_LOG, TOKEN_PATH, '(b) beside bare + log'),
    mixed: await pair(BARE_MIX, TOKEN_MIX, '(b) beside bare, mixed'),
    loggedMixed: await pair(BARE_LOG_MIX, TOKEN_MIX, '(b) beside bare + log, mixed'),
    logLine: await pair(LOG_ERRORS, TOKEN_PATH, 'log all beside errors'),
  };
}
type Besides = Awaited<ReturnType<typeof besideRuns>>;

/** At one connection: what leadgate and the bare proxies add to the direct round trip. */
async function latencyPass(targets: readonly Target[]) {
  process.stderr.write('latency pass: 1 connection\n');
  const single = await measure(
    [DIRECT, BARE, BARE_LOG, TOKEN_PATH].flatMap((n) => targets.filter((t) => t.name === n)),
    { ...ROUND_OPTIONS, seconds: Math.max(3, Math.round(SECONDS / 2)), connections: 1, warmup: 1 },
  );
  const direct = single.get(DIRECT);
  const added = (name: string) => ({
    p50_us: Math.round((single.get(name)?.p50 ?? 0) - (direct?.p50 ?? 0)),
    p99_us: Math.round((single.get(name)?.p99 ?? 0) - (direct?.p99 ?? 0)),
  });
  return { leadgate: added(TOKEN_PATH), bare: added(BARE), bareLog: added(BARE_LOG) };
}

/** The token path's target: at most this many µs of CPU per request over the bare undici proxy. */
const TOKEN_TARGET_US = 10;
const errorsNote = (n: number) => (n > 0 ? `; ${n} unexpected answers or socket errors` : '');

/**
 * The verdict lines: the token path's from the side-by-side rounds (the host's swings cancel
 * there), with bare beside bare for what the method itself reads, then the table's figure, each
 * row measured alone in turn; then the mixed clients', and those of the rows read against (b),
 * each when its row ran: tracing's, the revocation set's, the rate limits' and the workers'.
 */
function printVerdicts(rows: Rows, results: Map<string, Measured>, besides: Besides) {
  const b = rows.find((r) => r.target === TOKEN_PATH);
  if (b === undefined) return;
  const { token, bare: aa, logged, mixed, loggedMixed, logLine } = besides;
  /** Over the bare proxy that also logs each request (pino) and adds one header: issue 14's floor of a proxy that logs. */
  const overLogging = (x: Beside | null) =>
    x === null
      ? ''
      : `\n  over the bare undici proxy that also writes one pino log line and one header, side by side: ${median(x.diffs).toFixed(1)} µs (${spreadOf(x.diffs)})${errorsNote(x.errors)}`;
  // bare and (b) are always measured (BENCH_ONLY keeps them), so the side-by-side rounds always ran
  if (token !== null) {
    const over = round1(median(token.diffs));
    const calibration =
      aa == null ? '' : `; bare beside bare ${median(aa.diffs).toFixed(1)} µs (${spreadOf(aa.diffs)})`;
    console.log(
      `\nverdict (CPU, the steady figure): the token path costs ${over} µs CPU per request above the bare undici proxy, ` +
        `the two measured side by side (${met(over, TOKEN_TARGET_US)}; ${spreadOf(token.diffs, TOKEN_TARGET_US)})${calibration}` +
        errorsNote(token.errors + (aa?.errors ?? 0)) +
        overLogging(logged),
    );
    const alone = spreadOf(pairedDiffs(results.get(TOKEN_PATH), results.get(BARE)), TOKEN_TARGET_US);
    console.log(
      `the same, each measured alone in turn (the table): ${b.cpu_us_per_request} µs CPU per request, ${b.cpu_us_over_bare} µs above bare; ${alone}`,
    );
  }
  if (mixed != null && MIX !== null) {
    const over = round1(median(mixed.diffs));
    console.log(
      `mixed clients (${MIX.clients.map((c) => c.client).join(', ')}; recorded ${MIX.recorded}): the token path costs ${over} µs CPU per request above the bare undici proxy on the same mix, side by side ` +
        `(${met(over, TOKEN_TARGET_US)}; ${spreadOf(mixed.diffs, TOKEN_TARGET_US)})${errorsNote(mixed.errors)}${overLogging(loggedMixed)}`,
    );
  }
  if (logLine !== null)
    console.log(
      `the access-log line: (b) with log.requests: all costs ${median(logLine.diffs).toFixed(1)} µs CPU per request over (b) with errors (no line for a 200), side by side (${spreadOf(logLine.diffs)})`,
    );
  const overB = (name: string) => {
    const r = results.get(name);
    return r === undefined ? null : round1(pairedOver(r, results.get(TOKEN_PATH)));
  };
  const row = (name: string) => rows.find((r) => r.target === name) as Rows[number];
  /** The line of the row `name`, from its CPU over (b)'s, paired by round; none when it did not run. */
  const line = (name: string, text: (over: number) => string) => {
    const over = overB(name);
    if (over !== null) console.log(text(over));
  };
  line(
    TRACED,
    (over) =>
      `tracing: on at 1 % costs ${over} µs CPU per request over (b) with tracing off (${met(over, 5)}); every request sampled: ${overB(TRACED_ALL)} µs`,
  );
  line(REVOKED, (over) => {
    // the lookups themselves, in process: over HTTP the rounds swing by more than the target
    const p = pipelineCost(tokenHeaders(), API);
    return (
      `revocation: a set of 10,000 leads and 1,000 keys costs ${over} µs CPU per request on the token path over (b) with none, paired by round over HTTP; ` +
      `in the §3 pipeline itself ${p.over_ns} ns per request (${p.a_ns} ns without, ${p.b_ns} ns with; A B B A, median of 10 rounds) (target ≤ 1 µs: ${p.over_ns <= 1000 ? 'met' : 'not met'})`
    );
  });
  line(LIMITED, (over) => {
    const [limited, control] = [results.get(LIMITED), results.get(LIMITED_CONTROL)];
    const memory = round1(pairedOver(limited, control));
    return (
      `rate limits: one policy in memory costs ${memory} µs CPU per request over (b) on the same processes, A B B A (${met(memory, 3)}; ` +
      `${spreadOf(pairedDiffs(limited, control), 3)}); ${over} µs over (b)'s own processes, paired by round`
    );
  });
  line(
    LIMITED_REDIS,
    (over) =>
      `rate limits: one policy on Redis costs ${over} µs CPU per request in leadgate over (b) (${met(over, 15)}), ` +
      `and ${row(LIMITED_REDIS).side_cpu_us_per_request ?? '?'} µs in redis-server`,
  );
  line(WORKERS_2, () => {
    const w2 = row(WORKERS_2);
    return `workers: 2 serve ${w2.rps} req/s against ${b.rps} for one process (×${(w2.rps / b.rps).toFixed(2)}), ${w2.cpu_us_per_request} µs CPU per request (primary and workers) against ${b.cpu_us_per_request}`;
  });
}

function print(rows: Rows, latency: Awaited<ReturnType<typeof latencyPass>> | null) {
  console.log(
    '\n| target | req/s | p50 µs | p99 µs | CPU µs/req | CPU over bare | req/s ÷ bare | ÷ nginx |\n|---|---|---|---|---|---|---|---|',
  );
  for (const r of rows) {
    const over = r.target.startsWith('leadgate') ? `**${r.cpu_us_over_bare}**` : r.cpu_us_over_bare;
    console.log(
      `| ${r.target} | ${r.rps} | ${r.p50_us} | ${r.p99_us} | ${r.cpu_us_per_request} | ${over} | ${r.rps_vs_bare} | ${r.rps_vs_nginx} |`,
    );
  }
  if (latency !== null) {
    const { leadgate: lg, bare, bareLog: log } = latency;
    console.log(
      `\nadded latency over direct, 1 connection (p50 / p99 µs): leadgate (b) ${lg.p50_us} / ${lg.p99_us}; ` +
        `bare undici ${bare.p50_us} / ${bare.p99_us}; bare undici + log line + header ${log.p50_us} / ${log.p99_us}`,
    );
  }
}

/** The side-by-side rounds as latest.json keeps them. */
function besideJson(b: Besides) {
  const of = (x: Beside | null) =>
    x && { median_us: round1(median(x.diffs)), rounds_us: x.diffs.map(round1), errors: x.errors };
  return {
    token_over_bare: of(b.token),
    bare_beside_bare: of(b.bare),
    token_over_bare_with_log_line: of(b.logged),
    ...(b.mixed === null ? {} : { token_over_bare_mixed_clients: of(b.mixed) }),
    ...(b.loggedMixed === null ? {} : { token_over_bare_with_log_line_mixed_clients: of(b.loggedMixed) }),
    ...(b.logLine === null ? {} : { log_all_over_errors: of(b.logLine) }),
  };
}

runBench(async () => {
  pinSelf();
  const cores = cpus().length;
  process.stderr.write(
    `leadgate bench: wrk, ${cores} cores, ${ROUNDS}×${SECONDS}s, ${CONNECTIONS} connections; ${pinningNote}\n`,
  );
  const targets = await startTargets();
  const results = await measure(targets, { ...ROUND_OPTIONS, warmup: num('BENCH_WARMUP', 5) });
  const rows = rowsOf(targets, results);
  const besides = await besideRuns(targets);
  const latency = ONLY === null ? await latencyPass(targets) : null;
  writeResults('latest.json', {
    when: new Date().toISOString(),
    machine: { cores, cpu: cpus()[0]?.model ?? 'unknown', node: process.version },
    load: {
      tool: 'wrk',
      connections: CONNECTIONS,
      seconds: SECONDS,
      rounds: ROUNDS,
      processes_per_verdict_row: PROCESSES,
      pinned: pinningNote,
    },
    rows,
    side_by_side: besideJson(besides),
    latency_added_over_direct: latency,
  });
  print(rows, latency);
  printVerdicts(rows, results, besides);
  console.log(
    `wrk, ${machine}, ${ROUNDS} rounds × ${SECONDS} s, differences paired by round (the token verdict's rounds side by side); ` +
      `the rows the verdicts read each served by ${PROCESSES} process${PROCESSES === 1 ? '' : 'es'} in turn; ${pinningNote}; JSON in bench/results/latest.json`,
  );
});
