import { type ChildProcess, spawn } from 'node:child_process';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { writeBenchConfig } from './fixture.js';
import { pinned, type Role } from './pin.js';

/** A file of the compiled bench (`./upstream.js`), or of the build it belongs to (`../src/…`). */
export const benchFile = (file: string) => fileURLToPath(new URL(file, import.meta.url));
/** This checkout's `leadgate`. */
export const MAIN = benchFile('../src/main.js');

/** The number in the environment variable `name`, or `fallback`. */
export const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

/** The machine, as a bench's last line says it. */
export const machine = `${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), node ${process.version}`;

/** Every process a bench started, killed when it ends. */
export const children: ChildProcess[] = [];

/**
 * Starts `node ARGS` (on the cores of `role`: pin.ts; under `wrapper` when given) and resolves with
 * the port it says it listens on: leadgate's ready line, or a bare port number on a line (the
 * bench's own upstream and bare proxies).
 */
export function start(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  role: Role = 'measured',
  /** A command node runs under (valgrind and its options), or none. */
  wrapper: readonly string[] = [],
): Promise<{ port: number; pid: number; child: ChildProcess }> {
  const [first = process.execPath, ...rest] = [...wrapper, process.execPath];
  const [command, argv] = pinned(role, first, [...rest, ...args]);
  const child = spawn(command, argv, {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env },
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let buf = '';
    const onData = (chunk: Buffer) => {
      buf += chunk.toString();
      const ready = /"listen":"[^"]*:(\d+)"/.exec(buf) ?? /^(\d+)\n/.exec(buf);
      if (ready?.[1]) {
        buf = '';
        child.stdout?.off('data', onData);
        child.stdout?.resume(); // keep draining its log lines, as a log shipper would
        resolve({ port: Number(ready[1]), pid: child.pid ?? 0, child });
      }
    };
    child.stdout?.on('data', onData);
    child.on('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}`)));
  });
}

/** Processes that must end themselves (nginx: a SIGKILLed master leaves its worker running). */
export const gentle = new Set<ChildProcess>();

export function stopAll(): void {
  for (const c of children) if (c.exitCode === null) c.kill(gentle.has(c) ? 'SIGTERM' : 'SIGKILL');
}

/** The bench upstream (upstream.ts), on the load cores. */
export const startUpstream = () => start([benchFile('./upstream.js')], {}, 'load');

/** `leadgate serve --config CONFIG`, this checkout's or `main`'s, as {@link start} starts it. */
export const serve = (config: string, o: { main?: string; env?: NodeJS.ProcessEnv; role?: Role } = {}) =>
  start([o.main ?? MAIN, 'serve', '--config', config], o.env, o.role);

/**
 * What bench:ab and bench:instr compare, as `node` arguments: the bare undici proxy (the floor), and
 * a build's (`main`: {@link MAIN} or another ref's) token path alone and with one in-memory
 * rate-limit policy for every key, each proxying to the upstream at `upstreamPort`.
 */
export function floorAndTokenPath(upstreamPort: number) {
  const gateway = (main: string, rateLimit?: 'all') => [
    main,
    'serve',
    '--config',
    writeBenchConfig({ upstreamPort, rateLimit }),
  ];
  return {
    bare: [benchFile('./bare-undici.js'), String(upstreamPort)],
    token: (main: string) => gateway(main),
    policy: (main: string) => gateway(main, 'all'),
  };
}

/** Runs a bench: every process it started stopped at the end; an error printed, exit code 1. */
export function runBench(main: () => Promise<void>): void {
  process.on('exit', stopAll);
  main()
    .catch((err: unknown) => {
      console.error(err);
      process.exitCode = 1;
    })
    .finally(stopAll);
}
