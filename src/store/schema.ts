import { z } from 'zod';
import type { RedisSettings, RedisTarget, StoreSettings } from './settings.js';

const positive = z.number().int().positive();

const hostPort = z
  .string()
  .regex(/^(\[[0-9a-fA-F:.]+\]|[^\s:[\]]+):\d{1,5}$/, 'must be host:port, e.g. redis-0.redis:6379');

/**
 * `state.redis` (CONTRACT §8, §9, §12): exactly one of one Redis by `url`, Redis with Sentinel by
 * `sentinel`, or a Redis Cluster by `cluster`; the password in the URL, in `password`, or in
 * `password_file`.
 */
export const redisSettingsSchema = z
  .strictObject({
    url: z.url({ protocol: /^rediss?$/ }).optional(),
    sentinel: z
      .strictObject({
        /** The master's name, as in `sentinel monitor <name> …`. */
        master: z.string().min(1),
        nodes: z.array(hostPort).min(1),
      })
      .optional(),
    cluster: z
      .strictObject({
        /** Seed nodes; one that answers is enough, the others are learnt from it. */
        nodes: z.array(hostPort).min(1),
        /** In-transit encryption to every node (the system's CAs, plus NODE_EXTRA_CA_CERTS). */
        tls: z.boolean().default(false),
      })
      .optional(),
    password: z.string().min(1).optional(),
    password_file: z.string().min(1).optional(),
    timeout_ms: positive.default(50),
    key_prefix: z.string().default('leadgate:'),
  })
  .superRefine((redis, ctx) => {
    const set = [redis.url, redis.sentinel, redis.cluster].filter((v) => v !== undefined).length;
    if (set !== 1) {
      ctx.addIssue({
        code: 'custom',
        message:
          'set exactly one of url (one Redis), sentinel (Redis with Sentinel) or cluster (Redis Cluster)',
      });
    }
    if (redis.password !== undefined && redis.password_file !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['password_file'],
        message: 'set password or password_file, not both',
      });
    }
  });

export type RawRedisSettings = z.infer<typeof redisSettingsSchema>;

/** Where single-use digests and rate-limit buckets live: Redis, or (default) this pod's memory. */
export const storeSchema = z
  .strictObject({
    redis: redisSettingsSchema.optional(),
  })
  .default({});

/** What each `state:` field means, for `leadgate docs` and docs/reference/config.md. */
export const storeMeanings: Readonly<Record<string, string>> = {
  'state.redis.url':
    'Redis (`redis://` or `rediss://`, user and password in the URL) for single-use digests and rate limits across replicas; without it, memory. Exactly one of `url`, `sentinel` or `cluster`',
  'state.redis.sentinel.master':
    'Redis with Sentinel: the master set name (`sentinel monitor <name> …`); every call goes to the master the sentinels name now, a failover is followed without a restart',
  'state.redis.sentinel.nodes':
    'sentinels as `host:port` (one is enough to start; the others are learnt from it)',
  'state.redis.cluster.nodes':
    'Redis Cluster (or a managed cluster-mode endpoint): seed nodes as `host:port`; one that answers is enough at start, the rest is learnt from it; `MOVED`/`ASK` are followed without a restart',
  'state.redis.cluster.tls':
    "TLS to every node (a managed service's in-transit encryption), verified against the system's CAs and `NODE_EXTRA_CA_CERTS`; the nodes' names or addresses as the cluster announces them must be in their certificates",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the config's own ${VAR} placeholder, shown as written
  'state.redis.password': "the master's and replicas' password (`${REDIS_PASSWORD}`); or in the URL",
  'state.redis.password_file': 'or read the password from this file (a mounted Secret)',
  'state.redis.timeout_ms':
    'bounds every store call, reconnects included; 3 failures in a row pause the store for 5 s',
  'state.redis.key_prefix': 'prefix of every Redis key leadgate writes',
};

/**
 * `state:` as validated → as the config keeps it, with `password_file` read by `readFile`
 * (relative to the config, watched like every file a config names); null when that file cannot be
 * read (reported by `readFile`).
 */
export function storeSettingsOf(
  raw: z.infer<typeof storeSchema>,
  readFile: (field: string, name: string) => string | null,
): StoreSettings | null {
  if (raw.redis === undefined) return { redis: null };
  const redis = resolveRedisSettings(raw.redis, readFile);
  return redis === null ? null : { redis };
}

function resolveRedisSettings(
  raw: RawRedisSettings,
  readFile: (field: string, name: string) => string | null,
): RedisSettings | null {
  let password = raw.password;
  if (raw.password_file !== undefined) {
    const content = readFile('password_file', raw.password_file);
    if (content === null) return null;
    password = content.replace(/\r?\n$/, '');
  }
  const target: RedisTarget =
    raw.cluster !== undefined
      ? { kind: 'cluster', nodes: raw.cluster.nodes.map(parseHostPort), tls: raw.cluster.tls }
      : raw.sentinel !== undefined
        ? { kind: 'sentinel', master: raw.sentinel.master, nodes: raw.sentinel.nodes.map(parseHostPort) }
        : { kind: 'url', url: raw.url ?? '' };
  return { target, password, timeoutMs: raw.timeout_ms, keyPrefix: raw.key_prefix };
}

function parseHostPort(text: string): { host: string; port: number } {
  const at = text.lastIndexOf(':');
  return { host: text.slice(0, at).replace(/^\[(.*)\]$/, '$1'), port: Number(text.slice(at + 1)) };
}
