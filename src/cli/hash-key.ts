import { hashApiKey } from '../auth/api-key.js';
import { guarded, parseOptions, UsageError } from './args.js';

/** `leadgate hash-key`: the `key_sha256` for an API key read on stdin (one trailing newline dropped). */
export function runHashKey(args: string[]): Promise<number> {
  return guarded(async () => {
    parseOptions(args, []);
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    const key = Buffer.concat(chunks)
      .toString('utf8')
      .replace(/\r?\n$/, '');
    if (key === '') throw new UsageError('give the API key on stdin');
    process.stdout.write(`${hashApiKey(key)}\n`);
    return 0;
  });
}
