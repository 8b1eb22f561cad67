import { signLeadToken } from '../client/index.js';
import { guarded, parseOptions, signingSecretFromEnv, UsageError } from './args.js';

/** `leadgate token`: a Path A lead token for one lead. */
export function runToken(args: string[]): Promise<number> {
  return guarded(() => {
    const opts = parseOptions(args, ['lead-id', 'ttl']);
    const leadId = opts['lead-id'];
    if (leadId === undefined || leadId === '') throw new UsageError('--lead-id is required');
    const ttl = opts.ttl === undefined ? 3600 : Number(opts.ttl);
    if (!Number.isInteger(ttl) || ttl <= 0) throw new UsageError('--ttl must be a whole number of seconds');
    process.stdout.write(`${signLeadToken(signingSecretFromEnv(), leadId, { ttlS: ttl })}\n`);
    return 0;
  });
}
