import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect } from '../helpers/collect.js';
import { blocksRunBy } from '../helpers/doc-blocks.js';
import { type Example, ROOT, startExample } from '../helpers/example.js';
import { freePort } from '../helpers/optional.js';

/** Runs a shell script from the repository root, as a user pastes it. */
function bash(script: string) {
  return collect('bash', ['-c', script], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
    timeoutMs: 60_000,
  });
}

/**
 * What the README's comments promise a command prints: `# {"a":1,...}` or `# ..."x":"y"...`,
 * cut into the literal pieces between the `...` (a trailing `(explanation)` is not output).
 */
function promised(script: string): string[] {
  return script
    .split('\n')
    .filter((l) => /^# (\{|\.\.\.)/.test(l))
    .flatMap((l) =>
      l
        .slice(2)
        .replace(/\s{2,}\(.*\)$/, '')
        .split('...')
        .map((piece) => piece.trim())
        .filter((piece) => piece !== ''),
    );
}

describe('README: Try it, Path A and Path B, against npm start', () => {
  let example: Example;
  beforeAll(async () => {
    example = await startExample();
  });
  afterAll(async () => {
    await example?.stop();
  });

  it('runs every block marked for this test, in order, and prints what the comments say', async () => {
    const blocks = blocksRunBy('README.md', 'test/docs/try-it.test.ts');
    expect(blocks.length).toBe(3);
    // The one change: npm start listens where this test put it (LEADGATE_LISTEN_PORT), not on 8080.
    const script = blocks.map((b) => b.text).join('\n');
    expect(script).toContain('localhost:8080');
    const r = await bash(script.replaceAll('localhost:8080', `localhost:${example.apiPort}`));
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const pieces = promised(script);
    expect(pieces.length).toBeGreaterThanOrEqual(4);
    for (const piece of pieces) expect(r.stdout, piece).toContain(piece);
  }, 90_000);
});

describe('npm start with a port taken', () => {
  let holder: Server;
  let port: number;
  beforeAll(async () => {
    port = await freePort();
    holder = createServer();
    await new Promise<void>((resolve) => holder.listen(port, '127.0.0.1', resolve));
  });
  afterAll(() => {
    holder.close();
  });

  it("says so in one line and exits 1 when the echo backend's port is taken", async () => {
    const started = startExample({ LEADGATE_UPSTREAM_URL: `http://127.0.0.1:${port}` });
    const err = await started.then(
      () => null,
      (e: Error) => e.message,
    );
    expect(err).toMatch(/^npm start exited 1: /);
    const stderr = (err ?? '').replace(/^npm start exited 1: /, '');
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toContain(`127.0.0.1:${port}`);
    expect(stderr).toContain('LEADGATE_UPSTREAM_URL');
  });
});
