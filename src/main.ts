#!/usr/bin/env node
import cluster from 'node:cluster';
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { COMMANDS, overview } from './cli/commands.js';
import { nodeLineWarning } from './cli/node-line.js';
import { packageVersion } from './util/version.js';

const HELP = new Set(['help', '--help', '-h']);
const VERSION = new Set(['version', '--version', '-v']);

/**
 * The command line: conventional help and version (stdout, exit 0), usage errors on stderr with
 * exit 2. A word the CLI does not know is never echoed back: it may be a credential pasted by
 * mistake.
 */
export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const unsupported = nodeLineWarning();
  if (unsupported !== null && !cluster.isWorker) process.stderr.write(unsupported);
  if (command === undefined) return usageError('no command given');
  if (VERSION.has(command)) {
    process.stdout.write(`leadgate ${packageVersion()}\n`);
    return 0;
  }
  if (HELP.has(command)) {
    const topic = rest[0];
    if (topic === undefined) process.stdout.write(overview());
    else if (COMMANDS[topic]) process.stdout.write(COMMANDS[topic].usage);
    else return usageError('no such command');
    return 0;
  }
  const run = COMMANDS[command];
  if (!run) return usageError('unknown command');
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(run.usage);
    return 0;
  }
  return run.run(rest);
}

function usageError(why: string): number {
  process.stderr.write(`leadgate: ${why}\n\n${overview()}`);
  return 2;
}

const invokedDirectly = (() => {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
})();

/** Runs the CLI as a process: its exit code, and any unexpected error as one line on stderr. */
export function runCli(argv: string[]): void {
  main(argv).then(
    (code) => {
      if (code !== 0) process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`leadgate: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}

if (invokedDirectly) runCli(process.argv.slice(2));
