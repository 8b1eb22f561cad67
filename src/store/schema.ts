import { z } from 'zod';
import type { StoreSettings } from './settings.js';

const positive = z.number().int().positive();

/** Where single-use digests and rate-limit buckets live: Redis, or (default) this pod's memory. */
export const storeSchema = z
  .strictObject({
    redis: z
      .strictObject({
        url: z.url({ protocol: /^rediss?$/ }),
        timeout_ms: positive.default(50),
        key_prefix: z.string().default('leadgate:'),
      })
      .optional(),
  })
  .default({});

/** What each `state:` field means, for `leadgate docs` and docs/config.md. */
export const storeMeanings: Readonly<Record<string, string>> = {
  'state.redis.url':
    'Redis (`redis://` or `rediss://`, user and password in the URL) for single-use digests and rate limits across replicas; without it, memory',
  'state.redis.timeout_ms':
    'bounds every store call, reconnects included; 3 failures in a row pause the store for 5 s',
  'state.redis.key_prefix': 'prefix of every Redis key leadgate writes',
};

/** `state:` as validated → as the config keeps it. */
export function storeSettingsOf(raw: z.infer<typeof storeSchema>): StoreSettings {
  return {
    redis:
      raw.redis === undefined
        ? null
        : { url: raw.redis.url, timeoutMs: raw.redis.timeout_ms, keyPrefix: raw.redis.key_prefix },
  };
}
