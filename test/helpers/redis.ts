import { type ChildProcess, spawn } from 'node:child_process';
import { freePort, runs } from './optional.js';

export const REDIS_SERVER = '/usr/bin/redis-server';
export const hasRedis = runs(REDIS_SERVER, ['--version']);

export interface TestRedis {
  readonly url: string;
  readonly port: number;
  /** SIGSTOP: connections stay open, nothing answers (calls time out). */
  pause(): void;
  resume(): void;
  /** SIGKILL: connections are refused. */
  kill(): Promise<void>;
  /** Starts it again on the same port (empty). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** A real redis-server of this test's own, on 127.0.0.1 and a free port, without persistence. */
export async function startRedis(): Promise<TestRedis> {
  const port = await freePort();
  let child: ChildProcess = await launchRedis(port);
  const exited = (c: ChildProcess) =>
    new Promise<void>((resolve) =>
      c.exitCode !== null || c.signalCode !== null ? resolve() : c.once('exit', () => resolve()),
    );
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    pause: () => child.kill('SIGSTOP'),
    resume: () => child.kill('SIGCONT'),
    async kill() {
      child.kill('SIGKILL');
      await exited(child);
    },
    async restart() {
      child = await launchRedis(port);
    },
    async stop() {
      child.kill('SIGCONT');
      child.kill('SIGKILL');
      await exited(child);
    },
  };
}

/**
 * A redis-server on 127.0.0.1:`port` without persistence, resolved once it is ready. `wrap` puts
 * the command under another (the bench pins it to its load cores with taskset).
 */
export function launchRedis(
  port: number,
  wrap: (command: string, args: string[]) => readonly [string, string[]] = (c, a) => [c, a],
): Promise<ChildProcess> {
  const [command, args] = wrap(REDIS_SERVER, [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--protected-mode',
    'yes',
  ]);
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'ignore'] });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`redis-server did not start: ${out}`)), 10_000);
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('Ready to accept connections')) {
        clearTimeout(timer);
        child.stdout?.resume();
        resolve(child);
      }
    });
    child.once('exit', () => reject(new Error(`redis-server exited: ${out}`)));
  });
}
