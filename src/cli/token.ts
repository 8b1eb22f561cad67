import { readFileSync } from 'node:fs';
import { signLeadToken } from '../client/index.js';
import { readYaml } from '../config/yaml.js';
import { configPathFrom, guarded, parseOptions, signingSecretFromEnv, UsageError } from './args.js';

const DEFAULT_TTL_S = 3600;

/** `leadgate token`: a Path A lead token for one lead, never longer-lived than the gateway accepts. */
export function runToken(args: string[]): Promise<number> {
  return guarded(() => {
    const opts = parseOptions(args, ['lead-id', 'ttl', 'config', 'kid']);
    const leadId = opts['lead-id'];
    if (leadId === undefined || leadId === '') throw new UsageError('--lead-id is required');
    const ttl = opts.ttl === undefined ? DEFAULT_TTL_S : Number(opts.ttl);
    if (!Number.isInteger(ttl) || ttl <= 0) throw new UsageError('--ttl must be a whole number of seconds');
    const limit = ttlLimit(opts.config);
    if (ttl > limit.ttlS) {
      throw new UsageError(
        `--ttl ${ttl} is longer than lead_token.ttl_s (${limit.ttlS}, ${limit.from}): the gateway would refuse this token`,
      );
    }
    const kid = opts.kid === undefined ? {} : { kid: opts.kid };
    process.stdout.write(`${signLeadToken(signingSecretFromEnv(), leadId, { ttlS: ttl, ...kid })}\n`);
    return 0;
  });
}

/** The longest lifetime the gateway accepts: the config's `lead_token.ttl_s`, else the default. */
function ttlLimit(option: string | undefined): { ttlS: number; from: string } {
  const path = configPathFrom(option);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    if (option !== undefined) throw new UsageError(`cannot read the config ${path}`);
    return { ttlS: DEFAULT_TTL_S, from: 'the default; no config found' };
  }
  const parsed = readYaml(path, text);
  if ('problems' in parsed) throw new Error(parsed.problems.map((p) => p.message).join('; '));
  const ttl = (parsed.value as { lead_token?: { ttl_s?: unknown } } | null)?.lead_token?.ttl_s;
  return typeof ttl === 'number' && Number.isInteger(ttl) && ttl > 0
    ? { ttlS: ttl, from: path }
    : { ttlS: DEFAULT_TTL_S, from: `the default; ${path} does not set it` };
}
