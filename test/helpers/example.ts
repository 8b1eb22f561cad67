import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort } from './optional.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface Example {
  readonly child: ChildProcess;
  readonly apiPort: number;
  readonly adminPort: number;
  readonly upstreamPort: number;
  /** Everything written to stderr so far. */
  stderr(): string;
  readonly exited: Promise<number | null>;
  stop(): Promise<void>;
}

/**
 * `npm start` as a real process: what the script runs after its build (`node
 * dist/src/example/start.js`, from the repository root; the suite has built already), on free
 * ports given the documented way: LEADGATE_LISTEN_PORT, LEADGATE_ADMIN_PORT, LEADGATE_UPSTREAM_URL.
 * Resolves once the gateway's ready line is out; rejects with stderr if the process exits first.
 */
export async function startExample(env: NodeJS.ProcessEnv = {}): Promise<Example> {
  const [apiPort, adminPort, upstreamPort] = [await freePort(), await freePort(), await freePort()];
  const child = spawn(process.execPath, ['dist/src/example/start.js'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      LEADGATE_LISTEN_PORT: String(apiPort),
      LEADGATE_ADMIN_PORT: String(adminPort),
      LEADGATE_UPSTREAM_URL: `http://127.0.0.1:${upstreamPort}`,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (c: Buffer) => {
      stdout += c.toString();
      if (stdout.includes('"msg":"leadgate ready"')) resolve();
    });
    void exited.then((code) => reject(new Error(`npm start exited ${code}: ${stderr}`)));
  });
  return {
    child,
    apiPort,
    adminPort,
    upstreamPort,
    stderr: () => stderr,
    exited,
    async stop() {
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
