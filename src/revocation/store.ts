import { type RedisLink, script } from '../store/index.js';
import type { Revocation, Snapshot } from './types.js';

/**
 * The set in Redis, every key under one hash tag so each script touches one slot (Redis Cluster
 * included): `entries` (hash: `key:NAME` | `lead:ID` → JSON), `expiry` (sorted set: a lead
 * entry → when it removes itself), `version` (changes with every write), `serial` (its counter),
 * `applied` (hash: gateway → the version it applied and when it last confirmed it).
 */
export interface RevocationKeys {
  readonly entries: string;
  readonly expiry: string;
  readonly version: string;
  readonly serial: string;
  readonly applied: string;
}

export function revocationKeys(prefix: string): RevocationKeys {
  const base = `${prefix}{revocations}`;
  return {
    entries: `${base}:entries`,
    expiry: `${base}:expiry`,
    version: `${base}:version`,
    serial: `${base}:serial`,
    applied: `${base}:applied`,
  };
}

const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/** Lead entries past their `until` go (at most 100 a call); the version stays (every gateway drops them by time). */
const PRUNE = `local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, 100)
if #gone > 0 then
  redis.call('HDEL', KEYS[1], unpack(gone))
  redis.call('ZREM', KEYS[2], unpack(gone))
end`;

/** KEYS entries, expiry, version, applied; ARGV gateway, the version it applied → {version, now}. */
const POLL = script(`${NOW}
${PRUNE}
redis.call('HSET', KEYS[4], ARGV[1], ARGV[2] .. '|' .. now)
return {redis.call('GET', KEYS[3]) or '', now}`);

/** KEYS entries, version → {version, field, value, field, value, …}, one consistent read. */
const LOAD = script(`local out = {redis.call('GET', KEYS[2]) or ''}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all do out[i + 1] = all[i] end
return out`);

/** KEYS entries, expiry, version, serial; ARGV field, by, reason, lifetime ms (0: none) → {now, version}. */
const REVOKE = script(`${NOW}
${PRUNE}
local entry = {at = now, by = ARGV[2], reason = ARGV[3]}
local life = tonumber(ARGV[4])
if life > 0 then
  entry['until'] = now + life
  redis.call('ZADD', KEYS[2], now + life, ARGV[1])
end
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(entry))
local version = now .. '.' .. redis.call('INCR', KEYS[4])
redis.call('SET', KEYS[3], version)
return {now, version}`);

/** KEYS entries, expiry, version, serial; ARGV field → {removed (0|1), version}. */
const UNREVOKE = script(`local removed = redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
if removed == 0 then return {0, redis.call('GET', KEYS[3]) or ''} end
${NOW}
local version = now .. '.' .. redis.call('INCR', KEYS[4])
redis.call('SET', KEYS[3], version)
return {1, version}`);

/**
 * The store began again (its set is gone: a restart without persistence, a flush): a gateway
 * writes back the set it held. KEYS entries, expiry, version, serial; ARGV the version the
 * gateway found ('' for none), the serial of the version it held, then per entry field, JSON,
 * until ms (0: none) → {1, version, entries written} or, when the version is no longer the one
 * found (another gateway wrote first, or an operator), {0, version, 0}: nothing is written.
 * An entry the store holds again is kept as the store has it; one past its \`until\` is left out.
 * The serial goes past the one held, so gateways that held the same set see a newer version and
 * load it rather than write it again.
 */
const HEAL = script(`local found = redis.call('GET', KEYS[3]) or ''
if found ~= ARGV[1] then return {0, found, 0} end
${NOW}
local written = 0
for i = 3, #ARGV, 3 do
  local life = tonumber(ARGV[i + 2])
  if life == 0 or life > now then
    if redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) == 1 then
      written = written + 1
      if life > 0 then redis.call('ZADD', KEYS[2], life, ARGV[i]) end
    end
  end
end
local serial = math.max(tonumber(redis.call('GET', KEYS[4]) or '0'), tonumber(ARGV[2])) + 1
redis.call('SET', KEYS[4], serial)
local version = now .. '.' .. serial
redis.call('SET', KEYS[3], version)
return {1, version, written}`);

/**
 * KEYS applied; ARGV version, window ms → {gateways seen within the window, of them at version}.
 * Gateways not seen for an hour are forgotten.
 */
const APPLIED = script(`${NOW}
local all = redis.call('HGETALL', KEYS[1])
local seen, applied = 0, 0
for i = 1, #all, 2 do
  local sep = string.find(all[i + 1], '|', 1, true)
  local version = string.sub(all[i + 1], 1, sep - 1)
  local at = tonumber(string.sub(all[i + 1], sep + 1))
  if at < now - 3600000 then
    redis.call('HDEL', KEYS[1], all[i])
  elseif at >= now - tonumber(ARGV[2]) then
    seen = seen + 1
    if version == ARGV[1] then applied = applied + 1 end
  end
end
return {seen, applied}`);

const fieldOf = (kind: Revocation['kind'], name: string) => `${kind}:${name}`;

/** The store calls revocation makes: the gateways' sync and the operator's commands. */
export function revocationStore(link: RedisLink, keys: RevocationKeys) {
  const { entries, expiry, version, serial, applied } = keys;
  return {
    /** The current version (and the store's clock), recording that `gateway` applied `appliedVersion`. */
    async poll(gateway: string, appliedVersion: string): Promise<{ version: string; nowMs: number }> {
      const [v, now] = (await link.run(
        POLL,
        [entries, expiry, version, applied],
        [gateway, appliedVersion],
      )) as [string, number];
      return { version: String(v), nowMs: Number(now) };
    },
    async load(): Promise<Snapshot> {
      const reply = (await link.run(LOAD, [entries, version], [])) as string[];
      const out: Revocation[] = [];
      for (let i = 1; i + 1 < reply.length; i += 2) {
        const entry = decode(String(reply[i]), String(reply[i + 1]));
        if (entry !== null) out.push(entry);
      }
      return { version: String(reply[0] ?? ''), entries: out };
    },
    async revoke(
      kind: Revocation['kind'],
      name: string,
      meta: { by: string; reason: string; lifetimeMs: number },
    ): Promise<{ atMs: number; version: string }> {
      const [at, v] = (await link.run(
        REVOKE,
        [entries, expiry, version, serial],
        [fieldOf(kind, name), meta.by, meta.reason, String(meta.lifetimeMs)],
      )) as [number, string];
      return { atMs: Number(at), version: String(v) };
    },
    async unrevoke(kind: Revocation['kind'], name: string): Promise<{ removed: boolean; version: string }> {
      const [removed, v] = (await link.run(
        UNREVOKE,
        [entries, expiry, version, serial],
        [fieldOf(kind, name)],
      )) as [number, string];
      return { removed: Number(removed) === 1, version: String(v) };
    },
    /**
     * Writes \`held\` back to a store that began again, only while its version is still \`found\`
     * (what the gateway's poll read): the first gateway writes, the others find a newer version.
     */
    async heal(
      found: string,
      held: Snapshot,
    ): Promise<{ written: boolean; version: string; entries: number }> {
      const args = [found, String(serialOf(held.version) ?? 0)];
      for (const r of held.entries) {
        const until = r.untilMs === null ? {} : { until: r.untilMs };
        args.push(
          fieldOf(r.kind, r.name),
          JSON.stringify({ at: r.atMs, by: r.by, reason: r.reason, ...until }),
          String(r.untilMs ?? 0),
        );
      }
      const [ok, v, n] = (await link.run(HEAL, [entries, expiry, version, serial], args)) as [
        number,
        string,
        number,
      ];
      return { written: Number(ok) === 1, version: String(v), entries: Number(n) };
    },
    /** Gateways that confirmed with the store within `windowMs`, and how many of them run `atVersion`. */
    async applied(atVersion: string, windowMs: number): Promise<{ seen: number; applied: number }> {
      const [seen, done] = (await link.run(APPLIED, [applied], [atVersion, String(windowMs)])) as [
        number,
        number,
      ];
      return { seen: Number(seen), applied: Number(done) };
    },
  };
}

export type RevocationStore = ReturnType<typeof revocationStore>;

/** A version's serial (\`<ms>.<serial>\`): it only grows while the store keeps its data. */
export function serialOf(version: string): number | null {
  const dot = version.lastIndexOf('.');
  if (dot < 0) return null;
  const n = Number(version.slice(dot + 1));
  return Number.isSafeInteger(n) && n > 0 ? n : null;
}

/**
 * Whether the store began again since this gateway loaded \`held\`: its version is gone, or is
 * another one whose serial did not grow past the one held (a store that keeps its data counts
 * up; one that lost it counts from 1 again, an operator's write to it included).
 */
export function storeBeganAgain(heldVersion: string, storeVersion: string): boolean {
  const held = serialOf(heldVersion);
  if (held === null) return false;
  if (storeVersion === '') return true;
  if (storeVersion === heldVersion) return false;
  const now = serialOf(storeVersion);
  return now !== null && now <= held;
}

/** One stored entry, or null for one this version cannot read (another writer's). */
function decode(field: string, value: string): Revocation | null {
  const colon = field.indexOf(':');
  const kind = field.slice(0, colon);
  if (kind !== 'key' && kind !== 'lead') return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return null;
  }
  const { at, by, reason, until } = (parsed ?? {}) as Record<string, unknown>;
  if (typeof at !== 'number') return null;
  return {
    kind,
    name: field.slice(colon + 1),
    atMs: at,
    by: typeof by === 'string' ? by : '',
    reason: typeof reason === 'string' ? reason : '',
    untilMs: typeof until === 'number' ? until : null,
  };
}
