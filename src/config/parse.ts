import type { z } from 'zod';
import { isRange } from '../net/ip.js';
import {
  checkedKeysConfigSchema,
  configSchema,
  isRfc3339,
  KEY_NAME,
  KEY_SHA256,
  KID,
  keySchema,
  MIN_KEY,
  MIN_SECRET,
  ORIGIN,
  type RawConfig,
  type RawKey,
} from './schema.js';

/**
 * `configSchema.safeParse`, fast for a config with many keys. zod costs microseconds per key,
 * about a second for 100,000, so each key of the common shape (secrets in the config, no `*_file`)
 * is checked by a plain function; any other key goes through `keySchema`, and the rest of the
 * config through zod as before. When anything fails, the whole config is parsed again by `configSchema`,
 * so every problem is reported exactly as zod reports it.
 */
export function parseConfig(value: unknown): z.ZodSafeParseResult<RawConfig> {
  const keys = checkedKeys(value);
  if (keys !== null) {
    const fast = checkedKeysConfigSchema.safeParse({ ...(value as object), keys });
    if (fast.success) return fast;
  }
  return configSchema.safeParse(value);
}

/** Each key as `keySchema` outputs it; null when one fails (or there is no list of keys). */
function checkedKeys(value: unknown): RawKey[] | null {
  const list = value !== null && typeof value === 'object' ? (value as { keys?: unknown }).keys : undefined;
  if (!Array.isArray(list)) return null;
  const out: RawKey[] = [];
  const rangeCheck = rememberedRanges();
  for (const key of list) {
    if (isPlainKey(key, rangeCheck)) out.push(key);
    else {
      const parsed = keySchema.safeParse(key);
      if (!parsed.success) return null;
      out.push(parsed.data);
    }
  }
  return out;
}

const PLAIN_FIELDS = new Set([
  'name',
  'key',
  'key_sha256',
  'access_type',
  'purpose',
  'signing_secret',
  'signing_secrets',
  'origin_ips',
  'cors_origins',
  'expires_at',
]);
const ENTRY_FIELDS = new Set(['kid', 'secret', 'verify_until']);

type Fields = Record<string, unknown>;

/**
 * True only for a key that `keySchema` accepts as it is (it has no defaults or transforms): a plain
 * object of the fields in PLAIN_FIELDS, its secrets given in the config (no `*_file`). False says
 * nothing: such a key is left to `keySchema`. A test holds the two together. `rangeCheck` checks
 * an `origin_ips` entry (a load passes one that remembers each text's answer).
 */
export function isPlainKey(key: unknown, rangeCheck: (v: unknown) => boolean = isRangeValue): key is RawKey {
  if (!isPlainObject(key, PLAIN_FIELDS)) return false;
  return (
    typeof key.name === 'string' &&
    KEY_NAME.test(key.name) &&
    hasOneValue(key) &&
    (key.signing_secrets === undefined
      ? isSecret(key.signing_secret)
      : key.signing_secret === undefined && isRotation(key.signing_secrets)) &&
    (key.access_type === 'WRITE'
      ? key.purpose === undefined
      : key.access_type === 'READ' && (key.purpose === 'SERVER' || key.purpose === 'STOREFRONT')) &&
    (key.origin_ips === undefined || isListOf(key.origin_ips, rangeCheck)) &&
    (key.cors_origins === undefined || isListOf(key.cors_origins, isOrigin)) &&
    (key.expires_at === undefined || isTime(key.expires_at))
  );
}

function isPlainObject(value: unknown, fields: ReadonlySet<string>): value is Fields {
  if (value === null || typeof value !== 'object' || Object.getPrototypeOf(value) !== Object.prototype) {
    return false;
  }
  for (const field of Object.keys(value)) if (!fields.has(field)) return false;
  return true;
}

/** Exactly one of `key` and `key_sha256`, well formed. */
function hasOneValue(key: Fields): boolean {
  if (key.key === undefined) return typeof key.key_sha256 === 'string' && KEY_SHA256.test(key.key_sha256);
  return key.key_sha256 === undefined && typeof key.key === 'string' && key.key.length >= MIN_KEY;
}

/** `signing_secrets`: entries with a kid and a secret, kids all different, the first without `verify_until`. */
function isRotation(list: unknown): boolean {
  if (!Array.isArray(list) || list.length === 0) return false;
  const kids = new Set<unknown>();
  return list.every((entry: unknown, i) => {
    if (!isPlainObject(entry, ENTRY_FIELDS) || kids.has(entry.kid)) return false;
    kids.add(entry.kid);
    return (
      typeof entry.kid === 'string' &&
      KID.test(entry.kid) &&
      isSecret(entry.secret) &&
      (entry.verify_until === undefined || (i > 0 && isTime(entry.verify_until)))
    );
  });
}

const isSecret = (v: unknown) => typeof v === 'string' && v.length >= MIN_SECRET;
const isRangeValue = (v: unknown) => typeof v === 'string' && isRange(v);

/**
 * {@link isRangeValue}, each text checked once: an office or VPN range recurs across many keys (the
 * reviewed soak config's 100,000 keys name 50,000 CIDRs, 10,394 of them different).
 */
function rememberedRanges(): (v: unknown) => boolean {
  const seen = new Map<string, boolean>();
  return (v) => {
    if (typeof v !== 'string') return false;
    const known = seen.get(v);
    if (known !== undefined) return known;
    const ok = isRange(v);
    seen.set(v, ok);
    return ok;
  };
}
const isOrigin = (v: unknown) => typeof v === 'string' && ORIGIN.test(v);
const isTime = (v: unknown) => typeof v === 'string' && isRfc3339(v);
const isListOf = (list: unknown, item: (v: unknown) => boolean) => Array.isArray(list) && list.every(item);
