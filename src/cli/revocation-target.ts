import { ConfigError, formatProblem, loadConfig } from '../config/load.js';
import type { Config } from '../config/types.js';
import { isValidLeadId, LEAD_ID_RULE } from '../contract/lead-id.js';
import { StoreUnreachable } from '../revocation/admin.js';
import type { Revocation } from '../revocation/index.js';
import type { RedisSettings } from '../store/index.js';
import { configPathFrom, UsageError } from './args.js';

/**
 * The gateway's own config, and its `state.redis`: without one there is no store every gateway
 * reads, so the command says what to do instead (exit 2).
 */
export function loadForRevocation(
  option: string | undefined,
  kind: Revocation['kind'],
): { config: Config; redis: RedisSettings } {
  const path = configPathFrom(option);
  let config: Config;
  try {
    config = loadConfig(path, { env: process.env });
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.problems.map(formatProblem).join('\n'));
    throw new UsageError(`cannot read the config ${path}`);
  }
  const redis = config.state.redis;
  if (redis === null) {
    throw new UsageError(
      kind === 'key'
        ? `${path} has no state.redis: revocation needs a store every gateway shares. Remove the key from the config instead (each gateway reloads it)`
        : `${path} has no state.redis: revocation needs a store every gateway shares. Without one, a lead's tokens can only be stopped by rotating its key's signing secret`,
    );
  }
  return { config, redis };
}

/** `--key NAME` (a key of the config) or `--lead LEAD_ID`, exactly one. */
export function target(
  opts: { key?: string | undefined; lead?: string | undefined },
  config: Config,
): { kind: Revocation['kind']; name: string } {
  if ((opts.key === undefined) === (opts.lead === undefined)) {
    throw new UsageError('name exactly one of --key NAME or --lead LEAD_ID');
  }
  if (opts.key !== undefined) {
    if (!config.keys.nameList().includes(opts.key)) {
      throw new UsageError(
        `${config.file} has no key named ${JSON.stringify(opts.key)} (names: ${config.keys.nameList().join(', ')})`,
      );
    }
    return { kind: 'key', name: opts.key };
  }
  const lead = opts.lead ?? '';
  if (!isValidLeadId(lead)) throw new UsageError(`--lead: ${LEAD_ID_RULE}`);
  return { kind: 'lead', name: lead };
}

/** A store that cannot be reached before anything was written: exit 1, saying so; anything else rethrown. */
export function unreachableExit(err: unknown): number {
  if (!(err instanceof StoreUnreachable)) throw err;
  process.stderr.write(`leadgate: the state store cannot be reached (${err.message}); nothing was changed\n`);
  return 1;
}
