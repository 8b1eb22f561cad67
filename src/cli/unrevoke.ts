import { appliedSentence, waitApplied, withRevocationStore } from '../revocation/admin.js';
import { guarded, parseOptions } from './args.js';
import { loadForRevocation, target, unreachableExit } from './revocation-target.js';

/** How long `unrevoke` waits to count the gateways that applied it. */
const APPLIED_WAIT_MS = 2_000;

/** `leadgate unrevoke --key NAME | --lead LEAD_ID`: lifts a revocation everywhere within a second. */
export function runUnrevoke(args: string[]): Promise<number> {
  return guarded(async () => {
    const opts = parseOptions(args, ['config', 'key', 'lead']);
    const { config, redis } = loadForRevocation(opts.config, opts.lead !== undefined ? 'lead' : 'key');
    const what = target(opts, config);
    try {
      await withRevocationStore(redis, async (store, retry) => {
        const done = await retry(() => store.unrevoke(what.kind, what.name));
        if (!done.removed) {
          process.stdout.write(`${what.kind} ${what.name} was not revoked: nothing changed\n`);
          return;
        }
        process.stdout.write(
          `lifted the revocation of ${what.kind} ${what.name}: every gateway accepts it again within 1 s\n`,
        );
        const counts = await waitApplied(store, done.version, APPLIED_WAIT_MS).catch(() => null);
        process.stdout.write(`${appliedSentence(counts)}\n`);
      });
      return 0;
    } catch (err) {
      return unreachableExit(err);
    }
  });
}
