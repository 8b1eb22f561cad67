import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Vitest's global setup: one temporary folder for the whole run, made the TMPDIR of every test
 * worker and of every process a test starts with the environment it inherits (leadgate, nginx,
 * Redis; caddy, the example and the merchant runtimes get an environment of their own), and
 * removed when the run ends. The fixtures write configs of up to 18 MiB; left in /tmp, a few runs
 * filled gigabytes.
 */
export default function setup(): () => void {
  const root = mkdtempSync(join(tmpdir(), 'leadgate-tests-'));
  process.env.TMPDIR = root;
  return () => rmSync(root, { recursive: true, force: true });
}
