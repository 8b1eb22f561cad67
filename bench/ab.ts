import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { signLeadToken } from '../src/client/index.js';
import { cpuMicros } from './cpu.js';
import { SECRET, STOREFRONT_KEY, writeBenchConfig } from './fixture.js';
import { hasWrk, runLoad } from './load.js';
import { median } from './median.js';
import { mixedRequests, recordedClients } from './mix/mix.js';
import { pinningNote, pinSelf } from './pin.js';
import { start, stopAll } from './process.js';
import { buildRef, ROOT } from './worktree.js';

/**
 * `npm run bench:ab -- <git-ref>`: this checkout (A) against another ref (B), built in a temporary
 * git work tree, in one interleaved run beside the bare undici proxy. Each round measures every
 * target once (A and B in alternating order); a difference is taken within a round, then the
 * median over the rounds is reported with its range. CPU = the process's utime + stime ÷ requests.
 * Short rounds, many of them: a shared machine's slow swings hit both sides of a pair alike.
 * AB_ROUNDS (default 15), AB_SECONDS (2), AB_WARMUP (5 runs per target), AB_CONNECTIONS (50);
 * AB_MIX=1 sends every target the recorded clients' requests in turn (mix/) instead of one fixed one.
 * Processes pinned as pin.ts says.
 */
const ROUNDS = Number(process.env.AB_ROUNDS ?? 15);
const SECONDS = Number(process.env.AB_SECONDS ?? 2);
const CONNECTIONS = Number(process.env.AB_CONNECTIONS ?? 50);
const WARMUP = Number(process.env.AB_WARMUP ?? 5);
const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));
const MIX = process.env.AB_MIX === '1' ? recordedClients() : null;

interface Target {
  readonly name: string;
  readonly port: number;
  readonly pid: number;
}

const token = signLeadToken(SECRET, 'lead-1');
const HEADERS = { 'x-apikey': STOREFRONT_KEY, 'x-source': 'web', 'x-leadtoken': token };

/** CPU µs per request of one bounded load run against `t`; the fewest requests any run served. */
let fewest = Number.POSITIVE_INFINITY;
async function cpuPerRequest(t: Target, seconds: number): Promise<number> {
  const before = cpuMicros(t.pid);
  const r = await runLoad({
    url: `http://127.0.0.1:${t.port}/api/v2/merchant/orders`,
    headers: HEADERS,
    ...(MIX === null
      ? {}
      : { requests: mixedRequests(MIX, { host: `127.0.0.1:${t.port}`, apikey: STOREFRONT_KEY, token }) }),
    connections: CONNECTIONS,
    seconds,
  });
  if (r.errors > 0) throw new Error(`${t.name}: ${r.errors} requests failed`);
  fewest = Math.min(fewest, r.rps);
  return (cpuMicros(t.pid) - before) / r.requests;
}

async function startTargets(refMain: string) {
  const upstream = await start([here('./upstream.js')], {}, 'load');
  const serve = async (name: string, main: string, limited: boolean): Promise<Target> => {
    const config = writeBenchConfig({
      upstreamPort: upstream.port,
      engine: 'undici',
      ...(limited ? { rateLimit: { redisPort: null } } : {}),
    });
    const p = await start([main, 'serve', '--config', config]);
    return { name, port: p.port, pid: p.child.pid ?? 0 };
  };
  const bare = await start([here('./bare-undici.js'), String(upstream.port)]);
  const here_ = here('../src/main.js');
  return {
    bare: { name: 'bare undici proxy', port: bare.port, pid: bare.child.pid ?? 0 },
    a: await serve('A token', here_, false),
    b: await serve('B token', refMain, false),
    aLimited: await serve('A token + 1 policy', here_, true),
    bLimited: await serve('B token + 1 policy', refMain, true),
  };
}

type Targets = Awaited<ReturnType<typeof startTargets>>;
type Round = Record<keyof Targets, number>;

async function measure(targets: Targets): Promise<Round[]> {
  const names = Object.keys(targets) as Array<keyof Targets>;
  // Warm-up: WARMUP runs per target, new connections each time, as in run.ts (why: there).
  for (let i = 0; i < WARMUP; i++) for (const n of names) await cpuPerRequest(targets[n], SECONDS);
  fewest = Number.POSITIVE_INFINITY; // the warning is about the counted runs
  const rounds: Round[] = [];
  for (let i = 1; i <= ROUNDS; i++) {
    // Each build's token path and its policy run back to back (the pair read within a round);
    // A before B in odd rounds, B before A in even ones: neither always runs second.
    const order: Array<keyof Targets> =
      i % 2 === 1 ? ['bare', 'a', 'aLimited', 'b', 'bLimited'] : ['bare', 'b', 'bLimited', 'a', 'aLimited'];
    const round = {} as Round;
    for (const n of order) round[n] = await cpuPerRequest(targets[n], SECONDS);
    rounds.push(round);
    const f = (x: number) => x.toFixed(1).padStart(6);
    process.stdout.write(
      `round ${i}: bare ${f(round.bare)} | token A ${f(round.a)} B ${f(round.b)} A−B ${f(round.a - round.b)} | ` +
        `+1 policy A ${f(round.aLimited)} B ${f(round.bLimited)} A−B ${f(round.aLimited - round.bLimited)}  (µs CPU/req)\n`,
    );
  }
  return rounds;
}

/** The median of a per-round difference, with the lowest and highest round. */
function spread(rounds: Round[], of: (r: Round) => number) {
  const xs = rounds.map(of);
  return { median: median(xs), min: Math.min(...xs), max: Math.max(...xs) };
}

const show = (s: ReturnType<typeof spread>) =>
  `${s.median.toFixed(1)} µs (rounds ${s.min.toFixed(1)} to ${s.max.toFixed(1)})`;

function report(ref: string, commit: string, rounds: Round[]) {
  const ab = spread(rounds, (r) => r.a - r.b);
  const abLimited = spread(rounds, (r) => r.aLimited - r.bLimited);
  const overBare = spread(rounds, (r) => r.a - r.bare);
  const refOverBare = spread(rounds, (r) => r.b - r.bare);
  const policy = spread(rounds, (r) => r.aLimited - r.a);
  const change = (s: ReturnType<typeof spread>) =>
    s.max < 0
      ? 'A is cheaper in every round'
      : s.min > 0
        ? 'A costs more in every round'
        : 'no difference beyond the rounds’ spread';
  console.log(
    `\nA = this checkout, B = ${ref} (${commit.slice(0, 7)}); ${ROUNDS} rounds × ${SECONDS} s, ${CONNECTIONS} connections` +
      (MIX === null ? '' : `; mixed clients (${MIX.clients.length} recorded, AB_MIX=1)`),
  );
  console.log(`token path, A − B: ${show(ab)}: ${change(ab)}`);
  console.log(`token path + 1 in-memory policy, A − B: ${show(abLimited)}: ${change(abLimited)}`);
  console.log(`token path over bare undici: A ${show(overBare)}; B ${show(refOverBare)}`);
  console.log(`1 in-memory rate-limit policy over no policy, A: ${show(policy)}`);
  const unreliable = fewest < 2000 ? ' (unreliable: see the warning below)' : '';
  console.log(
    `verdict${unreliable}: A's token path is ${overBare.median.toFixed(1)} µs CPU per request over bare undici (target ≤ 10 µs: ${overBare.median <= 10 ? 'met' : 'not met'}); ` +
      `one in-memory policy adds ${policy.median.toFixed(1)} µs (target ≤ 3 µs: ${policy.median <= 3 ? 'met' : 'not met'})`,
  );
  if (fewest < 2000)
    console.log(
      `warning: a run served only ${Math.round(fewest)} req/s: the machine is too busy for these figures to mean much`,
    );
  const machine = `${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), node ${process.version}, ${hasWrk ? 'wrk' : 'autocannon'}; ${pinningNote}`;
  console.log(machine);
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
  writeFileSync(
    join(ROOT, 'bench/results/ab.json'),
    `${JSON.stringify({ when: new Date().toISOString(), ref, commit, machine, rounds }, null, 2)}\n`,
  );
}

async function main() {
  const ref = process.argv[2];
  if (ref === undefined) throw new Error('usage: npm run bench:ab -- <git-ref>');
  const built = buildRef(ref);
  pinSelf();
  try {
    const targets = await startTargets(built.main);
    report(ref, built.commit, await measure(targets));
  } finally {
    stopAll();
    built.remove();
  }
}

process.on('exit', stopAll);
main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
