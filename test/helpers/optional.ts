import { spawnSync } from 'node:child_process';
import { createServer } from 'node:net';

/**
 * Tests that need a tool this machine may lack (chromium, python3, the shared design folder).
 * Where it is missing, the suite is skipped and says why, once per test file, on stderr: a
 * skip is never silent. On CI (CI=true) a missing tool is an error instead, since .ci/run
 * installs everything the suite uses.
 */
const said = new Set<string>();

export function requires(what: string, available: boolean, howToGet: string): boolean {
  if (available) return true;
  if (process.env.CI) throw new Error(`${what} is missing on CI: ${howToGet}`);
  if (!said.has(what)) {
    said.add(what);
    process.stderr.write(`[skipped] tests that need ${what}: it is not here (${howToGet})\n`);
  }
  return false;
}

/** True when `command args` runs and exits 0 here (e.g. `nginx -v`): whether a tool is installed. */
export function runs(command: string, args: readonly string[]): boolean {
  return spawnSync(command, args, { stdio: 'ignore' }).status === 0;
}

/** A port nothing listens on right now, on 127.0.0.1: for a tool the test starts itself. */
export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}
