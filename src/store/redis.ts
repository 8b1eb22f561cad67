import { createHash } from 'node:crypto';
import { createClient } from '@redis/client';
import type { Bucket, GcraVerdict } from '../gcra/gcra.js';
import type { StateStore } from './types.js';

/**
 * ratelimit/gcra.ts in Lua: one key, one round trip, atomic; Redis' clock, so every replica counts
 * on the same time. The TAT is kept (in µs) until the bucket is full again, then the key expires.
 */
const GCRA_SCRIPT = `
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
`;
const GCRA_SHA = createHash('sha1').update(GCRA_SCRIPT).digest('hex');

export interface RedisStoreOptions {
  readonly url: string;
  readonly keyPrefix: string;
  readonly connectTimeoutMs: number;
  /** Connection errors (the client reconnects by itself; calls meanwhile fail at once). */
  readonly onError: (reason: string) => void;
}

/**
 * Redis through node-redis (`@redis/client`): `SET NX PX` for single use, the GCRA script by
 * EVALSHA. The client connects in the background and reconnects with backoff; with the offline
 * queue off, a call while disconnected fails at once instead of waiting (guarded.ts decides).
 */
export function createRedisStore(options: RedisStoreOptions): StateStore {
  const client = createClient({
    url: options.url,
    disableOfflineQueue: true,
    // guarded.ts bounds every call by timeout_ms; node-redis' own per-command AbortSignal timer
    // would cost ~1.5 µs per request on top (measured).
    commandOptions: { timeout: 0 },
    socket: {
      connectTimeout: options.connectTimeoutMs,
      reconnectStrategy: (retries: number) => Math.min(50 * 2 ** retries, 1_000),
    },
  });
  client.on('error', (err: unknown) => options.onError(reasonOf(err)));
  // Settles once connected; a first connect that fails leaves it pending (the client retries).
  const ready = client.connect().then(
    () => {},
    (err: unknown): Promise<void> => {
      options.onError(reasonOf(err));
      return new Promise(() => {});
    },
  );
  const prefix = options.keyPrefix;

  const evalGcra = async (key: string, bucket: Bucket): Promise<unknown> => {
    const args = { keys: [key], arguments: [String(bucket.emissionUs), String(bucket.toleranceUs)] };
    try {
      return await client.evalSha(GCRA_SHA, args);
    } catch (err) {
      if (!reasonOf(err).startsWith('NOSCRIPT')) throw err;
      return client.eval(GCRA_SCRIPT, args);
    }
  };

  return {
    kind: 'redis',
    ready,
    async claimOnce(id, ttlMs) {
      const reply = await client.set(`${prefix}${id}`, '1', {
        condition: 'NX',
        expiration: { type: 'PX', value: Math.max(1, Math.ceil(ttlMs)) },
      });
      return reply !== null;
    },
    async spend(id, bucket): Promise<GcraVerdict> {
      const reply = (await evalGcra(`${prefix}${id}`, bucket)) as [number, number, number];
      return { allowed: reply[0] === 1, tatUs: 0, remaining: reply[1], waitUs: reply[2] };
    },
    async close() {
      try {
        client.destroy();
      } catch {
        // not connected
      }
    },
  };
}

/** An error's code or message, never the URL (it may hold a password). */
function reasonOf(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as NodeJS.ErrnoException).code;
    return code ?? err.message.replace(/rediss?:\/\/\S*/g, 'redis://…');
  }
  return 'unknown error';
}
