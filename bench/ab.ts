import { API, tokenHeaders } from './fixture.js';
import { met, spread } from './median.js';
import { recordedClients } from './mix/mix.js';
import { pinningNote, pinSelf } from './pin.js';
import { floorAndTokenPath, MAIN, machine, num, runBench, start, startUpstream, stopAll } from './process.js';
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
const ROUNDS = num('AB_ROUNDS', 15);
const SECONDS = num('AB_SECONDS', 2);
const CONNECTIONS = num('AB_CONNECTIONS', 50);
const MIX = process.env.AB_MIX === '1' ? recordedClients() : undefined;

/** The five targets, by the names the rounds are kept under. */
const NAMES = ['bare', 'a', 'aLimited', 'b', 'bLimited'] as const;
type Name = (typeof NAMES)[number];
type Round = Record<Name, number>;

async function startTargets(refMain: string): Promise<Target[]> {
  const t = floorAndTokenPath((await startUpstream()).port);
  const args: Record<Name, string[]> = {
    bare: t.bare,
    a: t.token(MAIN),
    b: t.token(refMain),
    aLimited: t.policy(MAIN),
    bLimited: t.policy(refMain),
  };
  const targets: Target[] = [];
  for (const name of ['bare', 'a', 'b', 'aLimited', 'bLimited'] as const) {
    const { port, pid } = await start(args[name]);
    targets.push({ name, port, pid, path: API, headers: tokenHeaders, mix: MIX });
  }
  return targets;
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

function report(ref: string, commit: string, rounds: Round[], fewest: number) {
  const f = (x: number) => x.toFixed(1).padStart(6);
  for (const [i, r] of rounds.entries())
    console.log(
      `round ${i + 1}: bare ${f(r.bare)} | token A ${f(r.a)} B ${f(r.b)} A−B ${f(r.a - r.b)} | ` +
        `+1 policy A ${f(r.aLimited)} B ${f(r.bLimited)} A−B ${f(r.aLimited - r.bLimited)}  (µs CPU/req)`,
    );
  const of = (d: (r: Round) => number) => spread(rounds.map(d));
  const show = (s: ReturnType<typeof spread>) =>
    `${s.median.toFixed(1)} µs (rounds ${s.min.toFixed(1)} to ${s.max.toFixed(1)})`;
  const change = (s: ReturnType<typeof spread>) =>
    `${show(s)}: ${s.max < 0 ? 'A is cheaper in every round' : s.min > 0 ? 'A costs more in every round' : 'no difference beyond the rounds’ spread'}`;
  const overBare = of((r) => r.a - r.bare);
  const policy = of((r) => r.aLimited - r.a);
  console.log(
    `\nA = this checkout, B = ${ref} (${commit.slice(0, 7)}); ${ROUNDS} rounds × ${SECONDS} s, ${CONNECTIONS} connections` +
      (MIX === undefined ? '' : `; mixed clients (${MIX.clients.length} recorded, AB_MIX=1)`),
  );
  console.log(`token path, A − B: ${change(of((r) => r.a - r.b))}`);
  console.log(`token path + 1 in-memory policy, A − B: ${change(of((r) => r.aLimited - r.bLimited))}`);
  console.log(`token path over bare undici: A ${show(overBare)}; B ${show(of((r) => r.b - r.bare))}`);
  console.log(`1 in-memory rate-limit policy over no policy, A: ${show(policy)}`);
  console.log(
    `verdict${fewest < 2000 ? ' (unreliable: see the warning below)' : ''}: A's token path is ${overBare.median.toFixed(1)} µs CPU per request over bare undici (${met(overBare.median, 10)}); ` +
      `one in-memory policy adds ${policy.median.toFixed(1)} µs (${met(policy.median, 3)})`,
  );
  if (fewest < 2000)
    console.log(
      `warning: a run served only ${Math.round(fewest)} req/s: the machine is too busy for these figures to mean much`,
    );
  const note = `${machine}, wrk; ${pinningNote}`;
  console.log(note);
  writeResults('ab.json', { when: new Date().toISOString(), ref, commit, machine: note, rounds });
}

runBench(async () => {
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
    const cpu = (n: Name) => results.get(n)?.cpuRounds ?? [];
    const rounds = cpu('bare').map(
      (_, i) => Object.fromEntries(NAMES.map((n) => [n, cpu(n)[i] ?? Number.NaN])) as Round,
    );
    report(ref, built.commit, rounds, Math.min(...[...results.values()].map((m) => m.minRps)));
  } finally {
    stopAll();
    built.remove();
  }
});
