import { z } from 'zod';
import { leadsSchema } from '../leads/schema.js';
import { adminListenerSchema, listenerSchema } from '../listener/schema.js';
import { parseRange } from '../net/ip.js';
import { policiesFit, rateLimitsSchema } from '../ratelimit/schema.js';
import { storeSchema } from '../store/schema.js';
import { tracingSchema } from '../tracing/schema.js';

/**
 * The YAML shape of CONTRACT §2, as one zod schema: the source of the raw config type, of
 * validation and of defaults. Everything derived from it (hashes, KeyObjects, matchers) is built
 * in load.ts. Unknown fields are errors everywhere.
 */

const positive = z.number().int().positive();
const nonNegative = z.number().int().min(0);
/** A browser origin (`cors.origins`, `cors_origins`). */
export const ORIGIN = /^https?:\/\/[^/\s]+$/;
const origin = z
  .string()
  .regex(ORIGIN, 'must be an origin such as https://shop.example.com (no path, no "*")');

/** An address or CIDR range, checked here so it is reported with every other problem. */
const ipRange = z.string().superRefine((text, ctx) => {
  const range = parseRange(text);
  if (typeof range === 'string') ctx.addIssue({ code: 'custom', message: range });
});

const rfc3339 = z.iso.datetime({
  offset: true,
  message: 'must be an RFC 3339 time, e.g. 2027-06-30T00:00:00Z',
});

/** A key's `name`, and `key_sha256`; the shortest `key` and signing secret. */
export const KEY_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
export const KEY_SHA256 = /^[0-9a-fA-F]{64}$/;
export const MIN_KEY = 16;
export const MIN_SECRET = 16;

/** True for a time `expires_at` and `verify_until` accept. */
export const isRfc3339 = (text: string): boolean => rfc3339.safeParse(text).success;

/** A `signing_secrets` kid. */
export const KID = /^[\x21-\x7e]{1,64}$/;

/** One entry of `signing_secrets`: a kid, the secret (or its file) and when it stops verifying. */
const signingSecretSchema = z
  .strictObject({
    kid: z.string().regex(KID, 'must be 1-64 visible ASCII characters'),
    secret: z.string().min(MIN_SECRET, 'a signing secret must have at least 16 characters').optional(),
    secret_file: z.string().min(1).optional(),
    verify_until: rfc3339.optional(),
  })
  .superRefine((entry, ctx) => {
    if ((entry.secret === undefined) === (entry.secret_file === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: ['secret'],
        message: 'give exactly one of secret or secret_file',
      });
    }
  });

export const keySchema = z
  .strictObject({
    name: z.string().regex(KEY_NAME, 'must be 1-64 letters, digits, ".", "_" or "-"'),
    key: z.string().min(MIN_KEY, 'an API key must have at least 16 characters').optional(),
    key_sha256: z
      .string()
      .regex(KEY_SHA256, 'must be 64 hex characters (see `leadgate hash-key`)')
      .optional(),
    access_type: z.enum(['READ', 'WRITE']),
    purpose: z.enum(['SERVER', 'STOREFRONT']).optional(),
    signing_secret: z
      .string()
      .min(MIN_SECRET, 'a signing secret must have at least 16 characters')
      .optional(),
    signing_secret_file: z.string().min(1).optional(),
    /** Instead of signing_secret: the first mints, every live one verifies (rotation). */
    signing_secrets: z.array(signingSecretSchema).min(1, 'list at least one secret').optional(),
    origin_ips: z.array(ipRange).optional(),
    cors_origins: z.array(origin).optional(),
    /** After this instant (RFC 3339, with Z or an offset) the key is refused: 401 expired_api_key. */
    expires_at: rfc3339.optional(),
  })
  .superRefine((key, ctx) => {
    if ((key.key === undefined) === (key.key_sha256 === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['key'], message: 'give exactly one of key or key_sha256' });
    }
    const secretForms = [key.signing_secret, key.signing_secret_file, key.signing_secrets].filter(
      (v) => v !== undefined,
    ).length;
    if (secretForms !== 1) {
      ctx.addIssue({
        code: 'custom',
        path: ['signing_secret'],
        message: 'give exactly one of signing_secret, signing_secret_file or signing_secrets',
      });
    }
    const [first, ...rest] = key.signing_secrets ?? [];
    if (first?.verify_until !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['signing_secrets', 0, 'verify_until'],
        message: 'the first secret mints tokens: it cannot have verify_until',
      });
    }
    const kids = new Set<string>(first ? [first.kid] : []);
    for (const [i, entry] of rest.entries()) {
      if (kids.has(entry.kid)) {
        ctx.addIssue({
          code: 'custom',
          path: ['signing_secrets', i + 1, 'kid'],
          message: `kid "${entry.kid}" is listed twice`,
        });
      }
      kids.add(entry.kid);
    }
    if (key.access_type === 'READ' && key.purpose === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['purpose'],
        message: 'a READ key needs a purpose: SERVER or STOREFRONT',
      });
    }
    if (key.access_type === 'WRITE' && key.purpose !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['purpose'], message: 'a WRITE key has no purpose' });
    }
  });

/**
 * Duplicate names, and duplicate values of the same form, reported with the other problems. A
 * `key` and a `key_sha256` of one value are found after validation, where the keys are hashed.
 */
function uniqueKeys(keys: ReadonlyArray<z.infer<typeof keySchema>>, ctx: z.RefinementCtx): void {
  uniqueNames(keys, ctx);
  const values = new Map<string, string>();
  keys.forEach((k, i) => {
    const value = k.key ?? (k.key_sha256 === undefined ? undefined : `sha256:${k.key_sha256.toLowerCase()}`);
    if (value === undefined) return;
    const twin = values.get(value);
    if (twin !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: [i, k.key !== undefined ? 'key' : 'key_sha256'],
        message: `key "${k.name}" has the same value as key "${twin}"`,
      });
    } else values.set(value, k.name);
  });
}

function uniqueNames(keys: ReadonlyArray<{ name: string }>, ctx: z.RefinementCtx): void {
  const names = new Map<string, number>();
  keys.forEach((k, i) => {
    const sameName = names.get(k.name);
    if (sameName !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: [i, 'name'],
        message: `duplicate key name "${k.name}" (also keys.${sameName})`,
      });
    } else names.set(k.name, i);
  });
}

/** Every section but `keys`. */
/**
 * Connections one listener keeps open at once in one process: the worst a connection can make
 * the process hold (an h2 session with every stream waiting) times this stays inside a 512 MiB
 * pod (the arithmetic: docs/reference/limits.md).
 */
const MAX_CONNECTIONS = 256;

const configShape = {
  /** Processes serving the API (node:cluster): 1, a number, or `auto` (the cgroup CPU quota, else the cores). */
  workers: z.union([z.literal('auto'), z.number().int().min(1).max(256)]).default(1),
  state: storeSchema,
  /** The listeners (CONTRACT §11: each may have `tls:`, the API and forward-auth ones `proxy_protocol:`). */
  listen: listenerSchema(null),
  admin: adminListenerSchema.default({ host: '0.0.0.0', port: 9090 }),
  /** A second listener for auth-only answers: nginx auth_request, Traefik ForwardAuth, Envoy ext_authz. */
  forward_auth: z.strictObject({ listen: listenerSchema(8081) }).optional(),
  upstream: z.strictObject({
    url: z.url({ protocol: /^https?$/ }),
    timeout_ms: positive.default(30_000),
    connect_timeout_ms: positive.default(5_000),
    max_sockets: positive.default(256),
    health_path: z.string().startsWith('/').optional(),
    engine: z.enum(['undici', 'http-proxy']).default('undici'),
    underscore_headers: z.enum(['drop', 'pass']).default('drop'),
  }),
  client_ip: z
    .strictObject({ trusted_proxies: z.array(ipRange).default([]) })
    .default({ trusted_proxies: [] }),
  digest: z
    .strictObject({
      max_skew_s: positive.default(300),
      single_use: z.boolean().default(false),
      on_store_error: z.enum(['deny', 'allow']).default('deny'),
    })
    .default({ max_skew_s: 300, single_use: false, on_store_error: 'deny' }),
  rate_limits: rateLimitsSchema,
  lead_token: z
    .strictObject({
      ttl_s: positive.default(3600),
      max_skew_s: nonNegative.default(60),
      cache_size: nonNegative.default(10_000),
    })
    .default({ ttl_s: 3600, max_skew_s: 60, cache_size: 10_000 }),
  leads: leadsSchema,
  cors: z
    .strictObject({ origins: z.array(origin).default([]), max_age_s: nonNegative.default(600) })
    .default({ origins: [], max_age_s: 600 }),
  shutdown: z
    .strictObject({ delay_s: nonNegative.default(5), timeout_s: nonNegative.default(25) })
    .default({ delay_s: 5, timeout_s: 25 }),
  limits: z
    .strictObject({
      max_header_bytes: positive.default(16_384),
      max_header_count: positive.max(10_000).default(100),
      max_body_bytes: positive.optional(),
      header_timeout_ms: positive.default(10_000),
      request_timeout_ms: positive.default(60_000),
      keepalive_timeout_ms: positive.default(5_000),
      max_pipelined_requests: positive.max(1_000).default(16),
      send_timeout_ms: positive.default(60_000),
      buffer_body_bytes: nonNegative.max(16 * 2 ** 20).default(65_536),
      min_body_rate_bps: nonNegative.default(240),
      body_rate_grace_ms: nonNegative.default(5_000),
      max_connections: positive.max(1_000_000).default(MAX_CONNECTIONS),
    })
    .superRefine(timeoutsFit)
    .default({
      max_header_bytes: 16_384,
      max_header_count: 100,
      header_timeout_ms: 10_000,
      request_timeout_ms: 60_000,
      keepalive_timeout_ms: 5_000,
      max_pipelined_requests: 16,
      send_timeout_ms: 60_000,
      buffer_body_bytes: 65_536,
      min_body_rate_bps: 240,
      body_rate_grace_ms: 5_000,
      max_connections: MAX_CONNECTIONS,
    }),
  tracing: tracingSchema,
  log: z
    .strictObject({ requests: z.enum(['all', 'errors', 'none']).default('all') })
    .default({ requests: 'all' }),
};

/**
 * `limits:` timeouts that cannot work together are the config's error, with its file and line,
 * rather than Node's "headersTimeout must be <= requestTimeout" at start.
 */
function timeoutsFit(
  limits: {
    header_timeout_ms: number;
    request_timeout_ms: number;
    min_body_rate_bps: number;
    body_rate_grace_ms: number;
  },
  ctx: z.RefinementCtx,
): void {
  if (limits.request_timeout_ms < limits.header_timeout_ms) {
    ctx.addIssue({
      code: 'custom',
      path: ['request_timeout_ms'],
      message: `must be at least header_timeout_ms (${limits.header_timeout_ms}): the headers are part of the request`,
    });
  }
}

const atLeastOne = 'at least one key is needed';

export const configSchema = z
  .strictObject({ ...configShape, keys: z.array(keySchema).min(1, atLeastOne).superRefine(uniqueKeys) })
  .superRefine(policiesFit);

/**
 * The same checks for a config whose keys were each checked already (parse.ts): the list's count
 * and names. Two keys of one value are found where the keys are hashed (load.ts), with the same
 * words. Its output is a RawConfig.
 */
export const checkedKeysConfigSchema = z
  .strictObject({
    ...configShape,
    // one check of the list as a whole: z.array would visit 100,000 keys again (~70 ms); any
    // failure here sends the config through configSchema, which words the problem
    keys: z
      .custom<Array<z.infer<typeof keySchema>>>((list) => Array.isArray(list) && list.length > 0, atLeastOne)
      .superRefine(uniqueNames),
  })
  .superRefine(policiesFit);

export type RawConfig = z.infer<typeof configSchema>;
export type RawKey = z.infer<typeof keySchema>;
