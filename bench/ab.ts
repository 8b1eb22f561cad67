import { cpus } from 'node:os';
import { STOREFRONT_KEY, TOKEN, writeBenchConfig } from './fixture.js';
import { median } from './median.js';
import { recordedClients } from './mix/mix.js';
import { pinningNote, pinSelf } from './pin.js';
import { benchFile, serve as leadgate, MAIN, start, startUpstream, stopAll } from './process.js';
import { measure, type Target } from './rounds.js';
import { buildRef, writeResults } from './worktree.js';

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
const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const ROUNDS = num('AB_ROUNDS', 15);
const SECONDS = num('AB_SECONDS', 2);
const CONNECTIONS = num('AB_CONNECTIONS', 50);
const MIX = process.env.AB_MIX === '1' ? recordedClients() : undefined;

/** The five targets, by the names the rounds are kept under. */
const NAMES = ['bare', 'a', 'aLimited', 'b', 'bLimited'] as const;
type Name = (typeof NAMES)[number];
type Round = Record<Name, number>;

async function startTargets(refMain: string): Promise<Target[]> {
  const upstream = await startUpstream();
  const target = async (name: Name, started: ReturnType<typeof start>): Promise<Target> => {
    const p = await started;
    const headers = () => ({ 'x-apikey': STOREFRONT_KEY, 'x-source': 'web', 'x-leadtoken': TOKEN });
    return { name, port: p.port, pid: p.pid, path: '/api/v2/merchant/orders', headers, mix: MIX };
  };
  const token = (name: Name, main: string, limited: boolean) => {
    const rateLimit = limited ? 'all' : undefined;
    return target(
      name,
      leadgate(writeBenchConfig({ upstreamPort: upstream.port, engine: 'undici', rateLimit }), { main }),
    );
  };
  return [
    await target('bare', start([benchFile('./bare-undici.js'), String(upstream.port)])),
    await token('a', MAIN, false),
    await token('b', refMain, false),
    await token('aLimited', MAIN, true),
    await token('bLimited', refMain, true),
  ];
}

/**
 * Each build's token path and its policy run back to back (the pair read within a round); A before
 * B in odd rounds, B before A in even ones: neither always runs second.
 */
function order(round: number, targets: readonly Target[]): Target[] {
  const names: Name[] =
    round % 2 === 1 ? ['bare', 'a', 'aLimited', 'b', 'bLimited'] : ['bare', 'b', 'bLimited', 'a', 'aLimited'];
  return names.map((n) => targets.find((t) => t.name === n) as Target);
}

/** The median of a per-round difference, with the lowest and highest round. */
function spread(rounds: Round[], of: (r: Round) => number) {
  const xs = rounds.map(of);
  return { median: median(xs), min: Math.min(...xs), max: Math.max(...xs) };
}

const show = (s: ReturnType<typeof spread>) =>
  `${s.median.toFixed(1)} µs (rounds ${s.min.toFixed(1)} to ${s.max.toFixed(1)})`;

function report(ref: string, commit: string, rounds: Round[], fewest: number) {
  const f = (x: number) => x.toFixed(1).padStart(6);
  for (const [i, r] of rounds.entries())
    console.log(
      `round ${i + 1}: bare ${f(r.bare)} | token A ${f(r.a)} B ${f(r.b)} A−B ${f(r.a - r.b)} | ` +
        `+1 policy A ${f(r.aLimited)} B ${f(r.bLimited)} A−B ${f(r.aLimited - r.bLimited)}  (µs CPU/req)`,
    );
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
      (MIX === undefined ? '' : `; mixed clients (${MIX.clients.length} recorded, AB_MIX=1)`),
  );
  console.log(`token path, A − B: ${show(ab)}: ${change(ab)}`);
  console.log(`token path + 1 in-memory policy, A − B: ${show(abLimited)}: ${change(abLimited)}`);
  console.log(`token path over bare undici: A ${show(overBare)}; B ${show(refOverBare)}`);
  console.log(`1 in-memory rate-limit policy over no policy, A: ${show(policy)}`);
  const met = (x: number, target: number) => `target ≤ ${target} µs: ${x <= target ? 'met' : 'not met'}`;
  console.log(
    `verdict${fewest < 2000 ? ' (unreliable: see the warning below)' : ''}: A's token path is ${overBare.median.toFixed(1)} µs CPU per request over bare undici (${met(overBare.median, 10)}); ` +
      `one in-memory policy adds ${policy.median.toFixed(1)} µs (${met(policy.median, 3)})`,
  );
  if (fewest < 2000)
    console.log(
      `warning: a run served only ${Math.round(fewest)} req/s: the machine is too busy for these figures to mean much`,
    );
  const machine = `${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), node ${process.version}, wrk; ${pinningNote}`;
  console.log(machine);
  writeResults('ab.json', { when: new Date().toISOString(), ref, commit, machine, rounds });
}

async function main() {
  const ref = process.argv[2];
  if (ref === undefined) throw new Error('usage: npm run bench:ab -- <git-ref>');
  const built = buildRef(ref);
  pinSelf();
  try {
    const targets = await startTargets(built.main);
    const o = { rounds: ROUNDS, seconds: SECONDS, connections: CONNECTIONS, warmup: num('AB_WARMUP', 5) };
    const results = await measure(targets, { ...o, prime: 0, order });
    const failed = [...results].filter(([, m]) => m.errors > 0);
    if (failed.length > 0)
      throw new Error(failed.map(([n, m]) => `${n}: ${m.errors} requests failed`).join('; '));
    const of = (n: Name) => results.get(n)?.cpuRounds ?? [];
    const rounds = of('bare').map(
      (_, i) => Object.fromEntries(NAMES.map((n) => [n, of(n)[i] ?? Number.NaN])) as Round,
    );
    report(ref, built.commit, rounds, Math.min(...[...results.values()].map((m) => m.minRps)));
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
