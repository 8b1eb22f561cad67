import { keySlot } from './cluster.js';
import { CLAIM, type EpochEvents, trackEpoch } from './epoch.js';
import { type RedisLink, type Script, script } from './link.js';

/**
 * CONTRACT §12, the store-restart rule per shard. A Redis Cluster moves slots between masters
 * (a resharding) and loses data per shard (a master restarted empty, a failover to a replica that
 * lacked the newest writes). One marker per shard cannot exist in a cluster's key space (every
 * key belongs to a slot, and slots move), so the markers are per *hash tag*: a digest's claim key
 * carries one of TAGS hash tags, and that tag's marker lives in the same slot, so the claim script
 * checks the marker and claims in one call on one slot. A marker moves with its claims when its
 * slot moves; a shard that lost its data loses the markers of the tags it serves, or holds a
 * marker another node wrote. See docs/decisions/2026-11-28-cluster-store-restart.md.
 */
export const TAGS = 32;

/**
 * The marker is `<epoch ms> <run_id> <replid> <node id>`, written by the master serving the slot.
 * Read on a master, it is
 * - missing: the data set is empty (a restart without persistence, a flush): a new epoch;
 * - this node's, this run's: unchanged;
 * - this node's, another run: the node restarted (from a file that may be behind): a new epoch;
 * - another node's, whose replication id is this node's previous one (`master_replid2`): this
 *   node is a replica promoted in a failover and may lack the last writes: a new epoch;
 * - another node's otherwise: the slot moved here in a resharding (MIGRATE moves every key
 *   whole): the same epoch, the marker rewritten as this node's.
 */
export const ADOPT_CLUSTER = script(`
if redis.replicate_commands then pcall(redis.replicate_commands) end
local run = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
local repl = redis.call('INFO', 'replication')
local rid = string.match(repl, 'master_replid:(%x+)')
local rid2 = string.match(repl, 'master_replid2:(%x+)')
local me = redis.call('CLUSTER', 'MYID')
local m = redis.call('GET', KEYS[1])
local function write(e, why)
  local v = e .. ' ' .. run .. ' ' .. rid .. ' ' .. me
  redis.call('SET', KEYS[1], v)
  return {v, why}
end
local t = redis.call('TIME')
local now = string.format('%d%03d', t[1], math.floor(t[2] / 1000))
if not m then return write(now, 'empty data set') end
local e, mrun, mrid, mid = string.match(m, '^(%d+) (%x+) (%x+) (%x+)$')
if not e then return write(now, 'unreadable marker') end
if mid == me and mrun == run then return {m, ''} end
if mid == me then return write(now, 'new run') end
if mrid == rid2 then return write(now, 'failover') end
return write(e, 'moved here')
`);

/**
 * The cluster's claim: the marker is the one this gateway adopted *and* was written by the node
 * answering (a replica promoted since, or a slot moved here, answers 2: adopt, then claim again).
 */
export const CLAIM_CLUSTER = script(`
local m = redis.call('GET', KEYS[2])
if m ~= ARGV[2] or string.sub(m, -40) ~= redis.call('CLUSTER', 'MYID') then return 2 end
if redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1]) then return 1 end
return 0
`);

type Tracker = ReturnType<typeof trackEpoch>;

/** Every marker read at most this often on a shard's news (one shard's news reaches 32 tags). */
const READ_ALL_EVERY_MS = 100;

/** Where one claim goes: its key, its marker, the script and the epoch it is checked under. */
export interface ClaimPlace {
  readonly key: string;
  readonly marker: string;
  readonly claim: Script;
  readonly epoch: Tracker;
}

export interface ClaimPlaces {
  place(id: string): ClaimPlace;
  /** Adopts the marker of every place (at start: the store is ready once every shard answered). */
  adoptAll(): Promise<void>;
  stop(): void;
}

/** One Redis (a URL or Sentinel's master): one marker, the claim key as it always was. */
export function singlePlace(link: RedisLink, prefix: string, events: EpochEvents): ClaimPlaces {
  const marker = `${prefix}epoch`;
  const epoch = trackEpoch(link, marker, events);
  return {
    place: (id) => ({ key: `${prefix}${id}`, marker, claim: CLAIM, epoch }),
    adoptAll: async () => {
      await epoch.current();
    },
    stop: () => epoch.stop(),
  };
}

/**
 * A Redis Cluster: TAGS hash tags spread evenly over the 16384 slots (tag i hashes into the i-th
 * TAGS-th of them), so any split of the slots into ranges spreads claims evenly over the masters.
 * A claim's tag is taken from the end of its id (a sha256 in hex).
 */
export function clusterPlaces(link: RedisLink, prefix: string, events: EpochEvents): ClaimPlaces {
  const tags = clusterTags();
  // A shard found to have begun again, or a connection begun again: every tag's marker is read
  // at once, not at its next claim, so that a shard's epoch is the moment it was noticed.
  let lastReadAll = 0;
  const readAll = () => {
    if (Date.now() - lastReadAll < READ_ALL_EVERY_MS) return;
    lastReadAll = Date.now();
    for (const t of trackers) t.changed().catch(() => {});
  };
  const shardEvents = perShard(events, readAll);
  const trackers = tags.map((tag) => trackEpoch(link, `${prefix}{${tag}}epoch`, shardEvents, ADOPT_CLUSTER));
  link.onNewServer(() => setImmediate(readAll));
  return {
    place(id) {
      const i = tagIndex(id);
      return { ...clusterClaimKeys(prefix, id), claim: CLAIM_CLUSTER, epoch: trackers[i] as Tracker };
    },
    adoptAll: async () => {
      await Promise.all(trackers.map((t) => t.current()));
    },
    stop: () => {
      for (const t of trackers) t.stop();
    },
  };
}

/**
 * One shard's news is one event, not one per tag: a tag's first adoption is reported only when
 * newer than every epoch reported so far; a tag that began again, only when no other did in the
 * last RESTART_WINDOW_MS (the other tags of the same shard find it within that).
 */
function perShard(events: EpochEvents, beganAgain: () => void): EpochEvents {
  let reported: number | null = null;
  let lastRestart = Number.NEGATIVE_INFINITY;
  return {
    began(epochMs, previous, reason) {
      if (previous !== null) {
        beganAgain();
        if (Date.now() - lastRestart < RESTART_WINDOW_MS) return;
        lastRestart = Date.now();
      } else if (reported !== null && epochMs <= reported) return;
      reported = Math.max(reported ?? 0, epochMs);
      events.began(epochMs, previous, reason);
    },
  };
}

/** Tags of one shard that began again are found within this (every marker is read at once). */
const RESTART_WINDOW_MS = 2_000;

/** On a cluster, the key a claim of `id` is written at and its tag's marker. */
export function clusterClaimKeys(prefix: string, id: string): { key: string; marker: string } {
  const tag = clusterTags()[tagIndex(id)] as string;
  return { key: `${prefix}{${tag}}${id}`, marker: `${prefix}{${tag}}epoch` };
}

let computed: readonly string[] | null = null;
/** Tag i: the first of `0`, `1`, … whose slot lies in [i·16384/TAGS, (i+1)·16384/TAGS). */
export function clusterTags(): readonly string[] {
  if (computed !== null) return computed;
  const width = 16384 / TAGS;
  const tags: string[] = [];
  for (let i = 0; i < TAGS; i++) {
    let n = 0;
    while (Math.floor(keySlot(String(n)) / width) !== i) n++;
    tags.push(String(n));
  }
  computed = tags;
  return tags;
}

function tagIndex(id: string): number {
  const n = Number.parseInt(id.slice(-2), 16);
  if (Number.isFinite(n)) return n % TAGS;
  let h = 0;
  for (let i = 0; i < id.length; i++) h = (h * 31 + id.charCodeAt(i)) >>> 0;
  return h % TAGS;
}
