import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The checkout the benches run from. */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Writes `data` to bench/results/NAME as JSON. */
export function writeResults(name: string, data: unknown): void {
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
  writeFileSync(join(ROOT, 'bench/results', name), `${JSON.stringify(data, null, 2)}\n`);
}

export const git = (args: string[], cwd = ROOT): string =>
  execFileSync('git', args, { cwd, encoding: 'utf8' }).trim();

/**
 * Another ref of this repository, checked out in a temporary git work tree and built, for an A/B
 * run; node_modules reused when its lockfile is the same, else `npm ci`. `remove` deletes it.
 */
export function buildRef(ref: string): { dir: string; commit: string; main: string; remove(): void } {
  const commit = git(['rev-parse', '--verify', `${ref}^{commit}`]);
  const dir = mkdtempSync(join(tmpdir(), 'leadgate-ab-'));
  git(['worktree', 'add', '--detach', dir, commit]);
  const sameLock =
    existsSync(join(dir, 'package-lock.json')) &&
    readFileSync(join(dir, 'package-lock.json'), 'utf8') ===
      readFileSync(join(ROOT, 'package-lock.json'), 'utf8');
  process.stderr.write(
    `building ${ref} (${commit.slice(0, 7)}) in ${dir}; node_modules ${sameLock ? 'reused' : 'from npm ci'}\n`,
  );
  if (sameLock) symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  else
    execFileSync('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], {
      cwd: dir,
      stdio: 'inherit',
    });
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: dir, stdio: 'inherit' });
  return {
    dir,
    commit,
    main: join(dir, 'dist/src/main.js'),
    remove: () => git(['worktree', 'remove', '--force', dir]),
  };
}
