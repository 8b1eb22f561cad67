import { type ChildProcess, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuMicros } from './cpu.js';
import { writeBenchConfig } from './fixture.js';
import { median } from './median.js';
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
const HERE = fileURLToPath(new URL('../src/main.js', import.meta.url));
/** A start that has not printed its ready line by then has failed. */
const START_TIMEOUT_MS = 60_000;

/** The process being started, killed on any way out (an error, a signal, the end). */
let running: ChildProcess | null = null;
process.on('exit', () => running?.kill('SIGKILL'));
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));

interface Start {
  readonly wallMs: number;
  readonly cpuMs: number;
}

/** One start of `main` on `config`, to its ready line; the process is killed once it is ready. */
function startOnce(main: string, config: string): Promise<Start> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, [main, 'serve', '--config', config], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LEADGATE_WATCH: '0' },
    });
    running = child;
    let seen = '';
    let outcome: Start | Error | null = null;
    const finish = (result: Start | Error) => {
      if (outcome !== null) return;
      outcome = result;
      clearTimeout(timer);
      child.kill('SIGKILL');
    };
    const timer = setTimeout(
      () => finish(new Error(`${main} was not ready in ${START_TIMEOUT_MS} ms`)),
      START_TIMEOUT_MS,
    );
    const onData = (chunk: Buffer) => {
      seen = (seen + chunk.toString()).slice(-4096);
      if (outcome !== null || !seen.includes('"leadgate ready"')) return;
      const wallMs = performance.now() - t0;
      try {
        finish({ wallMs, cpuMs: cpuMicros(child.pid ?? 0) / 1000 });
      } catch (err) {
        finish(err instanceof Error ? err : new Error(String(err)));
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('error', (err) => {
      running = null;
      finish(err);
      reject(err); // a process that never started has no exit to wait for
    });
    child.once('exit', () => {
      running = null;
      finish(new Error(`${main} exited before it was ready: ${seen.slice(-400)}`));
      if (outcome instanceof Error) reject(outcome);
      else if (outcome !== null) resolve(outcome);
    });
  });
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
  const builds = [{ name: 'A (this checkout)', main: HERE, starts: [] as Start[] }];
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
    other?.remove();
    rmSync(dirname(config), { recursive: true, force: true });
  }
}

await main();
