#!/usr/bin/env node
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { runCheck } from './cli/check.js';
import { runDigest } from './cli/digest.js';
import { runHashKey } from './cli/hash-key.js';
import { runServe } from './cli/serve.js';
import { runToken } from './cli/token.js';

const USAGE = `leadgate: auth sidecar for the Merchant API

  leadgate serve    [--config PATH]     run the gateway (PATH: $LEADGATE_CONFIG, then config/gateway.yaml)
  leadgate check    [--config PATH] [--strict]
                                        validate a config; exit 1 listing every problem
                                        (--strict: warnings such as placeholder secrets too)
  leadgate digest   --customer-id ID [--timestamp T]
                                        print x-timestamp and x-leaddigest ($LEADGATE_SIGNING_SECRET)
  leadgate token    --lead-id ID [--ttl SECONDS]
                                        print a lead token ($LEADGATE_SIGNING_SECRET)
  leadgate hash-key                     read an API key on stdin, print its key_sha256
`;

const COMMANDS: Record<string, (args: string[]) => Promise<number>> = {
  serve: runServe,
  check: runCheck,
  digest: runDigest,
  token: runToken,
  'hash-key': runHashKey,
};

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(USAGE);
    return command === undefined ? 2 : 0;
  }
  const run = COMMANDS[command];
  if (!run) {
    process.stderr.write(`leadgate: unknown command "${command}"\n\n${USAGE}`);
    return 2;
  }
  return run(rest);
}

const invokedDirectly = (() => {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
})();

if (invokedDirectly) {
  main(process.argv.slice(2)).then(
    (code) => {
      if (code !== 0) process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`leadgate: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
