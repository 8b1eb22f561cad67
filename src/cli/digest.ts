import { leadDigest } from '../client/index.js';
import { guarded, parseOptions, signingSecretFromEnv, UsageError } from './args.js';

/** `leadgate digest`: the two headers a Path B lookup sends, for one customer. */
export function runDigest(args: string[]): Promise<number> {
  return guarded(() => {
    const opts = parseOptions(args, ['customer-id', 'timestamp']);
    const customerId = opts['customer-id'];
    if (customerId === undefined || customerId === '') throw new UsageError('--customer-id is required');
    const timestamp = opts.timestamp ?? String(Math.floor(Date.now() / 1000));
    if (!/^[0-9]{1,11}$/.test(timestamp)) throw new UsageError('--timestamp must be whole unix seconds');
    const digest = leadDigest(signingSecretFromEnv(), customerId, Number(timestamp));
    process.stdout.write(`x-timestamp: ${timestamp}\nx-leaddigest: ${digest}\n`);
    return 0;
  });
}
