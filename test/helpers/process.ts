import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { ask } from './client.js';

/**
 * The compiled binary, as `npm i -g` would run it: plain node, no test-runner interop. (From a
 * compiled bench, this file is dist/test/helpers/process.js itself.)
 */
export const BIN = fileURLToPath(
  new URL(
    import.meta.url.includes('/dist/test/') ? '../../src/main.js' : '../../dist/src/main.js',
    import.meta.url,
  ),
);

export function runCli(args: string[], opts: { env?: NodeJS.ProcessEnv; input?: string } = {}) {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH, ...opts.env },
    input: opts.input,
    encoding: 'utf8',
    timeout: 15_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** As runCli, without blocking this process: a gateway started in the test keeps serving meanwhile. */
export function runCliAsync(
  args: string[],
  opts: { env?: NodeJS.ProcessEnv } = {},
): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  const started = performance.now();
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr?.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: performance.now() - started });
    }),
  );
}

export interface Served {
  readonly child: ChildProcess;
  readonly apiPort: number;
  readonly adminPort: number;
  readonly lines: Array<Record<string, unknown>>;
  /** Resolves with the first log line matching `test`. */
  waitFor(test: (line: Record<string, unknown>) => boolean, ms?: number): Promise<Record<string, unknown>>;
  exited: Promise<number | null>;
  stop(): Promise<void>;
}

/** Runs `leadgate serve --config PATH` as a real process and waits (`readyMs` at most) for its ready line. */
export async function serve(
  configPath: string,
  env: NodeJS.ProcessEnv = {},
  readyMs = 10_000,
): Promise<Served> {
  const child = spawn(process.execPath, [BIN, 'serve', '--config', configPath], {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Array<Record<string, unknown>> = [];
  const waiters: Array<{
    test: (l: Record<string, unknown>) => boolean;
    resolve: (l: Record<string, unknown>) => void;
  }> = [];
  let buffer = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    let nl = buffer.indexOf('\n');
    while (nl !== -1) {
      const text = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      nl = buffer.indexOf('\n');
      try {
        const line = JSON.parse(text) as Record<string, unknown>;
        lines.push(line);
        for (const w of [...waiters]) {
          if (w.test(line)) {
            waiters.splice(waiters.indexOf(w), 1);
            w.resolve(line);
          }
        }
      } catch {
        // not a log line
      }
    }
  });
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const waitFor = (test: (l: Record<string, unknown>) => boolean, ms = 10_000) => {
    const found = lines.find(test);
    if (found) return Promise.resolve(found);
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no such log line within ${ms} ms; stderr: ${stderr}`)),
        ms,
      );
      waiters.push({
        test,
        resolve: (l) => {
          clearTimeout(timer);
          resolve(l);
        },
      });
      exited.then(() => reject(new Error(`leadgate exited; stderr: ${stderr}`)));
    });
  };
  const ready = await waitFor((l) => l.msg === 'leadgate ready', readyMs);
  const port = (s: unknown) => Number(String(s).split(':').at(-1));
  return {
    child,
    apiPort: port(ready.listen),
    adminPort: port(ready.admin),
    lines,
    waitFor,
    exited,
    async stop() {
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

/**
 * Six keep-alive clients send `path` in a loop; SIGTERM goes to `served` after 300 ms; a slow
 * request (`${path}/slow`, the upstream should hold it) straddles the listener's close; the
 * clients stop 600 ms after the signal. Every answer's status (or error), /readyz right after
 * the signal, and the exit code.
 */
export async function steadyLoadThroughSigterm(
  served: Served,
  path: string,
  headers: Record<string, string>,
) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  const results: Array<number | string> = [];
  let sending = true;
  const one = (p: string) =>
    ask(served.apiPort, { path: p, headers, agent }).then(
      (r) => results.push(r.status),
      (e: Error) => results.push(e.message),
    );
  const loops = Array.from({ length: 6 }, async () => {
    while (sending) await one(path);
  });
  await new Promise((r) => setTimeout(r, 300));
  served.child.kill('SIGTERM');
  let readyz = 0;
  for (let i = 0; i < 20 && readyz !== 503; i++) {
    readyz = (await ask(served.adminPort, { path: '/readyz' })).status;
    if (readyz !== 503) await new Promise((r) => setTimeout(r, 25));
  }
  const slow = one(`${path}/slow`);
  await new Promise((r) => setTimeout(r, 500));
  sending = false;
  await Promise.all(loops);
  await slow;
  const code = await served.exited;
  agent.destroy();
  return { results, readyz, code };
}
