import { rmSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname } from 'node:path';
import { cpuMicros } from './cpu.js';
import { writeBenchConfig } from './fixture.js';
import { median } from './median.js';
import { MAIN, serve, stopAll } from './process.js';
import { buildRef } from './worktree.js';

/**
 * `npm run bench:ready [-- <git-ref>]`: `leadgate serve` from start to its ready line on 100,000
 * keys of the reviewed soak config's shape (fixture.ts, 17 MiB), started READY_RUNS times (9); with
 * a ref, that ref's build (a temporary work tree, as bench:ab builds it) is started in turn with
 * this checkout's, so both see the same machine. Prints wall clock and CPU (the process's utime +
 * stime at the ready line, all its threads) per build, their medians and minima, and the median
 * of the per-pair differences. READY_KEYS changes the number of keys.
 */
const RUNS = Number(process.env.READY_RUNS ?? 9);
const KEYS = Number(process.env.READY_KEYS ?? 100_000);

interface Start {
  readonly wallMs: number;
  readonly cpuMs: number;
}

/** One start of `main` on `config`, on every core, to its ready line; killed once it is ready. */
async function startOnce(main: string, config: string): Promise<Start> {
  const t0 = performance.now();
  const { child, pid } = await serve(config, { main, env: { LEADGATE_WATCH: '0' }, role: 'free' });
  const wallMs = performance.now() - t0;
  const cpuMs = cpuMicros(pid) / 1000;
  child.kill('SIGKILL');
  return { wallMs, cpuMs };
}

const ms = (x: number) => `${Math.round(x)} ms`;

function summary(name: string, starts: readonly Start[]): string {
  const wall = starts.map((s) => s.wallMs);
  const cpu = starts.map((s) => s.cpuMs);
  return (
    `${name}: wall median ${ms(median(wall))} (min ${ms(Math.min(...wall))}, max ${ms(Math.max(...wall))}), ` +
    `CPU median ${ms(median(cpu))} (min ${ms(Math.min(...cpu))})`
  );
}

async function main() {
  const ref = process.argv[2];
  const other = ref === undefined ? null : buildRef(ref);
  const config = writeBenchConfig({ upstreamPort: 1, engine: 'undici', extraKeys: KEYS, keyShape: 'soak' });
  const builds = [
    {
      name: 'A (this checkout)',
      main: MAIN,
      starts: [] as Start[],
    },
  ];
  if (other !== null)
    builds.push({ name: `B (${ref}, ${other.commit.slice(0, 7)})`, main: other.main, starts: [] });
  try {
    process.stderr.write(`bench:ready: ${KEYS} soak-shaped keys, ${RUNS} starts per build\n`);
    // the config into the page cache, and each build's files, before anything is counted
    for (const build of builds) await startOnce(build.main, config);
    for (let run = 0; run < RUNS; run++) {
      // alternate which build goes first: a slow swing of the machine hits both alike
      const order = run % 2 === 0 ? builds : [...builds].reverse();
      for (const build of order) build.starts.push(await startOnce(build.main, config));
      const line = builds.map((b) => `${b.name.slice(0, 1)} ${ms(b.starts[run]?.wallMs ?? 0)}`).join(' | ');
      process.stdout.write(`run ${run + 1}: ${line}\n`);
    }
    for (const build of builds) process.stdout.write(`${summary(build.name, build.starts)}\n`);
    const [a, b] = builds;
    if (a !== undefined && b !== undefined) {
      const wall = a.starts.map((s, i) => s.wallMs - (b.starts[i]?.wallMs ?? 0));
      const cpu = a.starts.map((s, i) => s.cpuMs - (b.starts[i]?.cpuMs ?? 0));
      process.stdout.write(
        `A − B, median of pairs: wall ${ms(median(wall))}, CPU ${ms(median(cpu))} ` +
          `(wall pairs ${ms(Math.min(...wall))} to ${ms(Math.max(...wall))})\n`,
      );
    }
    process.stdout.write(
      `${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), node ${process.version}\n`,
    );
  } finally {
    stopAll();
    other?.remove();
    rmSync(dirname(config), { recursive: true, force: true });
  }
}

process.on('exit', stopAll);
await main();
