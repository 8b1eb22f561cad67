import { userInfo } from 'node:os';
import { appliedSentence, loadSettled, waitApplied, withRevocationStore } from '../revocation/admin.js';
import type { Revocation } from '../revocation/index.js';
import { guarded, parseOptions, UsageError } from './args.js';
import { loadForRevocation, target, unreachableExit } from './revocation-target.js';

/** How long `revoke` waits to count the gateways that applied it. */
const APPLIED_WAIT_MS = 2_000;

/**
 * `leadgate revoke`: stores a key's or a lead's revocation in the shared state store, which every
 * gateway applies within a second; `--list` shows what is in force.
 */
export function runRevoke(args: string[]): Promise<number> {
  return guarded(async () => {
    const opts = parseOptions(args, ['config', 'key', 'lead', 'reason', 'by'], ['list']);
    const { config, redis } = loadForRevocation(opts.config, opts.lead !== undefined ? 'lead' : 'key');
    try {
      if (opts.list === true) {
        if (opts.key !== undefined || opts.lead !== undefined) {
          throw new UsageError('--list takes no --key or --lead');
        }
        const snapshot = await withRevocationStore(redis, (store, retry) => loadSettled(store, retry));
        if (snapshot.version === '') process.stderr.write(`${NO_VERSION}\n`);
        process.stdout.write(listing(snapshot.entries, Date.now()));
        return 0;
      }
      const what = target(opts, config);
      const by = oneLine(opts.by ?? whoRuns());
      const reason = oneLine(opts.reason ?? '');
      // A lead's revocation covers tokens that may live `ttl_s` (+ the skew) after it: then it goes.
      const lifetimeMs =
        what.kind === 'lead' ? (config.leadToken.ttlS + config.leadToken.maxSkewS) * 1000 : 0;
      await withRevocationStore(redis, async (store, retry) => {
        const stored = await retry(() => store.revoke(what.kind, what.name, { by, reason, lifetimeMs }));
        process.stdout.write(`${describe(what, stored.atMs, lifetimeMs, by, reason)}\n`);
        // stored: from here a store that stops answering only leaves the count unknown
        const counts = await waitApplied(store, stored.version, APPLIED_WAIT_MS).catch(() => null);
        process.stdout.write(`${appliedSentence(counts)}\n`);
      });
      return 0;
    } catch (err) {
      return unreachableExit(err);
    }
  });
}

const NO_VERSION =
  'note: the store holds no revocation set: none was ever stored, or the store began again empty and no running gateway held a set to write back';

/** Free text kept to one line of `--list` (no control characters), at most 200 characters. */
function oneLine(text: string): string {
  return text
    .replace(/\p{Cc}+/gu, ' ')
    .trim()
    .slice(0, 200);
}

function whoRuns(): string {
  const env = process.env.USER ?? process.env.LOGNAME;
  if (env !== undefined && env !== '') return env;
  try {
    return userInfo().username;
  } catch {
    return 'unknown';
  }
}

const iso = (ms: number) => new Date(ms).toISOString();

function describe(
  what: { kind: Revocation['kind']; name: string },
  atMs: number,
  lifetimeMs: number,
  by: string,
  reason: string,
): string {
  const why = reason === '' ? '' : ` (reason: ${reason})`;
  if (what.kind === 'key') {
    return `revoked key ${what.name} at ${iso(atMs)} by ${by}${why}: every gateway answers it 401 revoked_api_key within 1 s, until: leadgate unrevoke --key ${what.name}`;
  }
  return `revoked lead ${what.name} at ${iso(atMs)} by ${by}${why}: its tokens issued until then are 401 revoked_lead_token within 1 s, tokens issued later work; it lifts itself at ${iso(atMs + lifetimeMs)}`;
}

/** One line each: kind, name, when, by whom, until when (leads), why. */
function listing(entries: readonly Revocation[], nowMs: number): string {
  const live = entries
    .filter((r) => r.untilMs === null || r.untilMs > nowMs)
    .sort((a, b) => a.atMs - b.atMs || a.name.localeCompare(b.name));
  if (live.length === 0) return 'no revocations in force\n';
  const rows = [
    ['KIND', 'NAME', 'REVOKED AT', 'BY', 'LIFTS ITSELF AT', 'REASON'],
    ...live.map((r) => [
      r.kind,
      r.name,
      iso(r.atMs),
      r.by,
      r.untilMs === null ? '-' : iso(r.untilMs),
      r.reason,
    ]),
  ];
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((row) => (row[i] ?? '').length))) ?? [];
  return rows
    .map(
      (row) =>
        `${row
          .map((cell, i) => cell.padEnd(widths[i] ?? 0))
          .join('  ')
          .trimEnd()}\n`,
    )
    .join('');
}
