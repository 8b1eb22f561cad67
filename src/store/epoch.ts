import { withTimeout } from './guarded.js';
import { type RedisLink, type Script, script } from './link.js';

/**
 * CONTRACT §9, single use outlives a store that loses its data. The marker key holds
 * `<epoch ms> <run_id>`: when the data set began, as Redis' clock has it, and the run of
 * redis-server it began on. The first gateway to find it missing (an empty data set: a restart
 * without persistence, a flush) or naming another run (a restart, a failover to a replica that may
 * lack the newest claims) writes a new one; every gateway of the fleet then adopts it.
 */
const ADOPT = script(`
if redis.replicate_commands then pcall(redis.replicate_commands) end
local run = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
local m = redis.call('GET', KEYS[1])
if m and string.sub(m, -#run) == run then return {m, ''} end
local t = redis.call('TIME')
local e = string.format('%d%03d %s', t[1], math.floor(t[2] / 1000), run)
redis.call('SET', KEYS[1], e)
if m then return {e, 'new run'} end
return {e, 'empty data set'}
`);

/**
 * The claim: `SET NX PX` in the same script that checks the marker is still the one this gateway
 * adopted, so a claim never lands on a store that began again unnoticed: 1 claimed, 0 used,
 * 2 the marker changed (adopt it, then claim again).
 */
export const CLAIM = script(`
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return 2 end
if redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1]) then return 1 end
return 0
`);

/** How often the marker is read even when nothing seems to have changed. */
export const RECHECK_MS = 1_000;
/** Bounds one read of the marker, so a store that hangs cannot hold every later claim. */
const ADOPT_TIMEOUT_MS = 1_000;

export interface Epoch {
  readonly marker: string;
  readonly epochMs: number;
}

export interface EpochEvents {
  /** The epoch this gateway knows changed (`previous` null at the first one it learns). */
  began(epochMs: number, previous: number | null, reason: string): void;
}

/**
 * This gateway's view of the marker: adopted before the first claim on each new connection or
 * master, again whenever a claim finds it changed, and every second besides. `adoptScript` reads
 * (or writes) the marker and answers `{marker, why}`, the epoch in ms first in the marker; a new
 * marker text with the same epoch (a cluster slot that moved to another master) is no new epoch.
 */
export function trackEpoch(
  link: RedisLink,
  markerKey: string,
  events: EpochEvents,
  adoptScript: Script = ADOPT,
) {
  let known: Epoch | null = null;
  /** The last marker adopted, kept across reconnects: a change from it is a store that began again. */
  let last: Epoch | null = null;
  let adopting: Promise<Epoch> | null = null;
  let generation = 0;

  const adopt = (): Promise<Epoch> => {
    if (adopting !== null) return adopting;
    const started = generation;
    const run = withTimeout(link.run(adoptScript, [markerKey], []), ADOPT_TIMEOUT_MS).then((reply) => {
      const [marker, wrote] = reply as [string, string];
      const epoch = { marker, epochMs: Number(marker.slice(0, marker.indexOf(' '))) };
      if (last?.marker !== marker) {
        if (last?.epochMs !== epoch.epochMs) {
          events.began(epoch.epochMs, last?.epochMs ?? null, wrote === '' ? 'adopted' : wrote);
        }
        last = epoch;
      }
      // A new server since this started: its answer may come from the old one.
      if (started === generation) known = epoch;
      return epoch;
    });
    adopting = run.finally(() => {
      adopting = null;
    });
    return adopting;
  };

  link.onNewServer(() => {
    generation++;
    known = null;
    adopting = null;
  });
  const timer = setInterval(() => {
    if (known !== null) adopt().catch(() => {});
  }, RECHECK_MS);
  timer.unref();

  return {
    /** The epoch to claim under: the known one, or adopted first. */
    current: (): Epoch | Promise<Epoch> => known ?? adopt(),
    /** A claim found the marker changed: read it again, after a read already under way. */
    changed: async (): Promise<Epoch> => {
      known = null;
      await adopting?.catch(() => {});
      return adopt();
    },
    stop: () => clearInterval(timer),
  };
}
