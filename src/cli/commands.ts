import { holdHangups } from './hangups.js';

/**
 * Each command's module is loaded when it runs: `--version` and `--help` load none of them, and
 * `check`, `digest`, `token` and `hash-key` not the gateway's (`--version`: 0.22 s → 0.03 s).
 */
const runServe = async (args: string[]) => {
  // held before the gateway's modules load: those alone take a tenth of a second
  const hangups = holdHangups();
  return (await import('./serve.js')).runServe(args, hangups);
};
const runCheck = async (args: string[]) => (await import('./check.js')).runCheck(args);
const runDigest = async (args: string[]) => (await import('./digest.js')).runDigest(args);
const runToken = async (args: string[]) => (await import('./token.js')).runToken(args);
const runRevoke = async (args: string[]) => (await import('./revoke.js')).runRevoke(args);
const runUnrevoke = async (args: string[]) => (await import('./unrevoke.js')).runUnrevoke(args);
const runHashKey = async (args: string[]) => (await import('./hash-key.js')).runHashKey(args);

export interface Command {
  readonly run: (args: string[]) => Promise<number>;
  /** One line for the overview. */
  readonly summary: string;
  /** `leadgate help CMD` and `leadgate CMD --help`. */
  readonly usage: string;
}

const CONFIG = `  --config PATH   the config file (default: $LEADGATE_CONFIG, then config/gateway.yaml)`;
const SECRET = `The signing secret is read from $LEADGATE_SIGNING_SECRET, never from the command line.`;

export const COMMANDS: Readonly<Record<string, Command>> = {
  serve: {
    run: runServe,
    summary: 'run the gateway',
    usage: `leadgate serve [--config PATH]

Runs the gateway: the API listener, the admin listener (/healthz, /readyz, /metrics),
config reloads on SIGHUP and on file changes, a graceful drain on SIGTERM.

${CONFIG}

Environment: LEADGATE_LISTEN_PORT, LEADGATE_ADMIN_PORT, LEADGATE_FORWARD_AUTH_PORT and
LEADGATE_UPSTREAM_URL override the config's values (docs/reference/config.md);
LEADGATE_WATCH=0 turns the file watch off.
`,
  },
  check: {
    run: runCheck,
    summary: 'validate a config; exit 1 listing every problem',
    usage: `leadgate check [--config PATH] [--strict]

Validates a config as the gateway would load it. Exit 0 with a summary; exit 1 listing every
problem with file and line. Warnings (placeholder or short secrets, keys about to expire) pass
unless --strict. The summary names the keys, where the leads come from (a leads.yaml beside
the config is used when the config has no leads section), and the addresses serve would use,
with the same LEADGATE_* environment overrides as serve.

${CONFIG}
  --strict        warnings count as problems
`,
  },
  digest: {
    run: runDigest,
    summary: 'print x-timestamp and x-leaddigest for a lead lookup (Path B)',
    usage: `leadgate digest --customer-id ID [--timestamp T]

Prints the two headers a Path B lookup sends for one customer.

  --customer-id ID   the merchant's customer id
  --timestamp T      unix seconds (default: now)

${SECRET}
`,
  },
  token: {
    run: runToken,
    summary: 'print a lead token (Path A)',
    usage: `leadgate token --lead-id ID [--ttl SECONDS] [--kid KID] [--config PATH]

Prints an HS256 lead token for one lead. A --ttl longer than the config's lead_token.ttl_s
(3600 when there is no config) is refused: the gateway would refuse the token.

  --lead-id ID      the lead's id
  --ttl SECONDS     lifetime (default 3600)
  --kid KID         the key id of the secret (keys with signing_secrets), put in the header
${CONFIG}

${SECRET}
`,
  },
  revoke: {
    run: runRevoke,
    summary: "refuse a key, or a lead's tokens, on every gateway within 1 s; --list",
    usage: `leadgate revoke --key NAME | --lead LEAD_ID [--reason TEXT] [--by WHO] [--config PATH]
leadgate revoke --list [--config PATH]

Stores a revocation in the config's shared state store (state.redis); every gateway that uses
that store applies it within 1 s, without a reload. A revoked key is answered 401
revoked_api_key everywhere (lookups and the forward-auth listener included) until unrevoke. A
revoked lead's tokens issued until now are answered 401 revoked_lead_token; tokens issued
after it (a new lookup, a new Path A token) work, and the revocation lifts itself once no token
it covers can still be valid (lead_token.ttl_s + max_skew_s later).

Prints what was stored and on how many of the gateways seen in the last 10 s it is applied.
--list prints what is in force: kind, name, when, by whom, until when, why.
Exit 0 once stored; 2 on a usage error or a config without state.redis (remove the key from
the config instead); 1 when the store cannot be reached (nothing was changed).

  --key NAME       a key's name in the config
  --lead LEAD_ID   a lead id
  --reason TEXT    why, for --list
  --by WHO         who revokes (default: the user name, $USER)
  --list           what is revoked now
${CONFIG}
`,
  },
  unrevoke: {
    run: runUnrevoke,
    summary: 'lift a revocation on every gateway within 1 s',
    usage: `leadgate unrevoke --key NAME | --lead LEAD_ID [--config PATH]

Removes a revocation from the shared state store; every gateway accepts the key (or the
lead's tokens) again within 1 s. Exit codes as for revoke.

  --key NAME       a key's name in the config
  --lead LEAD_ID   a lead id
${CONFIG}
`,
  },
  'hash-key': {
    run: runHashKey,
    summary: 'read an API key on stdin, print its key_sha256',
    usage: `leadgate hash-key < key.txt

Reads one API key on stdin (one trailing newline dropped) and prints the key_sha256 to put in
the config instead of the key. The key is never taken from the command line.
`,
  },
};

export function overview(): string {
  const rows: Array<[string, string]> = [
    ...Object.entries(COMMANDS).map(([name, c]): [string, string] => [name, c.summary]),
    ['help [COMMAND]', "this text, or one command's"],
    ['--version', 'the version'],
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  const lines = rows.map(([name, summary]) => `  leadgate ${name.padEnd(width)}   ${summary}`);
  return `leadgate: auth sidecar for the Merchant API

${lines.join('\n')}

Run 'leadgate help COMMAND' (or 'leadgate COMMAND --help') for a command's options.
`;
}
