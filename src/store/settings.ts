import { z } from 'zod';

/**
 * `state.redis` (CONTRACT §8, §9): one Redis by `url`, or Redis with Sentinel by `sentinel`, not
 * both; the password in the URL, in `password`, or in `password_file`.
 */
const hostPort = z
  .string()
  .regex(/^(\[[0-9a-fA-F:.]+\]|[^\s:[\]]+):\d{1,5}$/, 'must be host:port, e.g. redis-sentinel-0:26379');

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
    password: z.string().min(1).optional(),
    password_file: z.string().min(1).optional(),
    timeout_ms: z.number().int().positive().default(50),
    key_prefix: z.string().default('leadgate:'),
  })
  .superRefine((redis, ctx) => {
    if ((redis.url === undefined) === (redis.sentinel === undefined)) {
      ctx.addIssue({
        code: 'custom',
        message: 'set either url (one Redis) or sentinel (Redis with Sentinel)',
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

/** Where the store's master is found. */
export type RedisTarget =
  | { readonly kind: 'url'; readonly url: string }
  | {
      readonly kind: 'sentinel';
      readonly master: string;
      readonly nodes: readonly { readonly host: string; readonly port: number }[];
    };

export interface RedisSettings {
  readonly target: RedisTarget;
  /** From `password` or `password_file`; undefined: none, or the one in the URL. */
  readonly password: string | undefined;
  /** Bounds every store call, reconnects included. */
  readonly timeoutMs: number;
  readonly keyPrefix: string;
}

/**
 * The settings, with `password_file` read by `readFile` (relative to the config, watched like
 * every file a config names); null when the file cannot be read (reported by `readFile`).
 */
export function resolveRedisSettings(
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
    raw.sentinel === undefined
      ? { kind: 'url', url: raw.url ?? '' }
      : { kind: 'sentinel', master: raw.sentinel.master, nodes: raw.sentinel.nodes.map(parseHostPort) };
  return { target, password, timeoutMs: raw.timeout_ms, keyPrefix: raw.key_prefix };
}

function parseHostPort(text: string): { host: string; port: number } {
  const at = text.lastIndexOf(':');
  return { host: text.slice(0, at).replace(/^\[(.*)\]$/, '$1'), port: Number(text.slice(at + 1)) };
}
