import { execFileSync } from 'node:child_process';
import { cpus } from 'node:os';
import { runs } from '../test/helpers/optional.js';

/**
 * Where the bench's processes run ("Pinning" in bench/README.md): with two cores or more and
 * `taskset`, the process under test has the last core to itself; the load generator, the upstream,
 * Redis and the bench itself share the others. BENCH_PIN=0 turns it off.
 */
export type Role = 'measured' | 'load' | 'free';

const cores = cpus().length;
export const pinning = process.env.BENCH_PIN !== '0' && cores >= 2 && runs('taskset', ['--version']);

const CORES: Record<Role, string> = {
  measured: String(cores - 1),
  load: cores > 2 ? `0-${cores - 2}` : '0',
  free: `0-${cores - 1}`,
};

/**
 * `command args` as run under `role`'s cores (through taskset, which execs: the pid is the
 * command's). `free` is every core, said explicitly: the bench itself runs on the load cores
 * ({@link pinSelf}) and a child would otherwise inherit them.
 */
export function pinned(role: Role, command: string, args: readonly string[]): [string, string[]] {
  if (!pinning) return [command, [...args]];
  return ['taskset', ['-c', CORES[role], command, ...args]];
}

/**
 * The bench's own process, every thread, on the load cores: it reads the log lines the servers
 * under test write to their pipes while they are measured (load.ts), and that reading must not
 * run on the measured core.
 */
export function pinSelf(): void {
  if (pinning)
    execFileSync('taskset', ['-a', '-p', '-c', CORES.load, String(process.pid)], { stdio: 'ignore' });
}

/** Said once at the top of a bench's output. */
export const pinningNote = pinning
  ? `pinned: measured process on core ${CORES.measured}, load generator, upstream and the bench itself on ${CORES.load} (BENCH_PIN=0 to turn off)`
  : 'not pinned (one core, no taskset, or BENCH_PIN=0)';
