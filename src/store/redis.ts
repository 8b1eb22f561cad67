import type { GcraVerdict } from '../gcra/gcra.js';
import type { EpochEvents } from './epoch.js';
import { type RedisLink, script } from './link.js';
import { clusterPlaces, singlePlace } from './shards.js';
import { type Claim, type StateStore, StoreUnavailableError, stampedBefore } from './types.js';

/**
 * gcra/gcra.ts in Lua: one key, one round trip, atomic; Redis' clock, so every replica counts
 * on the same time. The TAT is kept (in µs) until the bucket is full again, then the key expires.
 */
const GCRA = script(`
if redis.replicate_commands then pcall(redis.replicate_commands) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local emission = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local allow_at = tat - tolerance
if now < allow_at then return {0, 0, allow_at - now} end
local next = tat + emission
redis.call('SET', KEYS[1], string.format('%d', next), 'PX', math.ceil((next - now) / 1000))
local remaining = math.floor((tolerance - (next - now)) / emission) + 1
if remaining <= 0 then return {1, 0, next - tolerance - now} end
return {1, remaining, next - now}
`);

export interface RedisStoreOptions {
  readonly link: RedisLink;
  readonly keyPrefix: string;
  readonly epoch: EpochEvents;
}

/**
 * Redis (one URL, the master Sentinel names, or a Redis Cluster): single use is `SET NX PX` in a
 * script that also checks the store (on a cluster: the shard holding the claim) has not begun
 * again since this gateway last looked (store/epoch.ts, store/shards.ts), rate limits the GCRA
 * script on one key. Each is one round trip on one slot; a store that began again costs one
 * more, once.
 */
export function createRedisStore(options: RedisStoreOptions): StateStore {
  const { link, keyPrefix: prefix } = options;
  const places =
    link.cluster === true
      ? clusterPlaces(link, prefix, options.epoch)
      : singlePlace(link, prefix, options.epoch);
  const shardOf = link.shardOf?.bind(link);

  async function claimOnce(id: string, ttlMs: number, stampedS: number): Promise<Claim> {
    const ttl = String(Math.max(1, Math.ceil(ttlMs)));
    const { key, marker, claim, epoch } = places.place(id);
    let known = await epoch.current();
    for (let attempt = 0; attempt < 2; attempt++) {
      if (stampedBefore(stampedS, known.epochMs)) return 'stale';
      const reply = await link.run(claim, [key, marker], [ttl, known.marker]);
      if (reply === 1) return 'claimed';
      if (reply === 0) return 'replayed';
      known = await epoch.changed();
    }
    throw new StoreUnavailableError('the store began again twice during one claim');
  }

  return {
    kind: 'redis',
    // Ready once the marker is adopted; while that fails, pending like a first connect that fails.
    ready: link.ready
      .then(() => places.adoptAll())
      .then(
        () => {},
        (): Promise<void> => new Promise(() => {}),
      ),
    claimOnce,
    onConnected: (listener) => link.onReady(listener),
    async spend(id, bucket): Promise<GcraVerdict> {
      const args = [String(bucket.emissionUs), String(bucket.toleranceUs)];
      const reply = (await link.run(GCRA, [`${prefix}${id}`], args)) as [number, number, number];
      return { allowed: reply[0] === 1, tatUs: 0, remaining: reply[1], waitUs: reply[2] };
    },
    ...(shardOf === undefined
      ? {}
      : {
          shardOf: (id: string, op: 'claim' | 'spend') =>
            shardOf(op === 'claim' ? places.place(id).key : `${prefix}${id}`),
        }),
    async close() {
      places.stop();
      link.close();
    },
  };
}
