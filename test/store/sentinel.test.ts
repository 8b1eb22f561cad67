import { createClient } from '@redis/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leadDigest } from '../../src/client/index.js';
import { ask } from '../helpers/client.js';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { requires } from '../helpers/optional.js';
import { type Served, serve } from '../helpers/process.js';
import { hasRedis } from '../helpers/redis.js';
import { MASTER_NAME, startSentinel, type TestSentinel } from '../helpers/sentinel.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

/**
 * CONTRACT §9, Sentinel: a gateway follows a failover without a restart; while no master answers
 * a digest is 503 store_unavailable (on_store_error: deny), never admitted unchecked; single use
 * and rate limits hold across it. Real processes: a master, a replica, three sentinels.
 */
const PREFIX = 'sentinel:';
const CUSTOMERS = 200;
const leads = `leads:\n${Array.from({ length: CUSTOMERS }, (_, i) => `  - { _id: "lead-${i}", customer_id: "cust-${i}" }`).join('\n')}\n`;

let upstream: RecordingUpstream;
beforeAll(async () => {
  upstream = await startRecordingUpstream();
});
afterAll(() => upstream.close());

const nowS = () => Math.floor(Date.now() / 1000);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Waits into the next whole second and stamps it: after everything that happened so far. */
const stampNow = async () => {
  await sleep(1005 - (Date.now() % 1000));
  return nowS();
};
const lookup = async (port: number, customer: number, ts: number) => {
  const digest = leadDigest(KEYS.storefront.secret, `cust-${customer}`, ts);
  const r = await ask(port, {
    path: `/api/v2/merchant/leads/x?customer_id=cust-${customer}`,
    headers: {
      'x-apikey': KEYS.storefront.key,
      'x-source': 'web',
      'x-timestamp': String(ts),
      'x-leaddigest': digest,
    },
  });
  return r.status === 200 ? '200' : `${r.status} ${r.json().code}`;
};
const orders = async (port: number) =>
  (
    await ask(port, {
      path: '/api/v2/merchant/orders',
      headers: { 'x-apikey': KEYS.server.key, 'x-source': 'web' },
    })
  ).status;
const metric = async (adminPort: number, name: string) => {
  const text = (await ask(adminPort, { path: '/metrics' })).text;
  return Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? Number.NaN);
};
/** Polls a Redis until `test` holds for the value of `key`. */
async function waitForKey(port: number, key: string, test: (v: string | null) => boolean): Promise<void> {
  const client = createClient({ url: `redis://127.0.0.1:${port}` });
  await client.connect();
  try {
    for (let i = 0; i < 100 && !test(await client.get(key)); i++) await sleep(50);
    expect(test(await client.get(key))).toBe(true);
  } finally {
    client.destroy();
  }
}

describe.runIf(requires('redis-server', hasRedis, 'Debian: apt-get install redis-server'))(
  'Redis with Sentinel, the master killed under steady lookups',
  () => {
    let sentinel: TestSentinel;
    let gw: Served;
    beforeAll(async () => {
      sentinel = await startSentinel();
      const file = writeConfig({
        upstream: upstream.url,
        leads,
        extra: `state:
  redis:
    sentinel: { master: ${MASTER_NAME}, nodes: [${sentinel.nodes.map((n) => `"${n}"`).join(', ')}] }
    key_prefix: "${PREFIX}"
digest: { single_use: true }
rate_limits:
  policies:
    - { name: per-key, by: key, limit: 5, window_s: 600, keys: [server] }`,
      });
      gw = await serve(file);
    }, 60_000);
    afterAll(async () => {
      await gw?.stop();
      await sentinel?.stop();
    });

    it('follows the failover: only 200, 503 store_unavailable or a stale stamp meanwhile; single use and limits hold', async () => {
      // Before: a digest used once, three of the five requests of the policy spent.
      // The gateway may be ready before its store answers (it waits 1 s at most): a 503 until then.
      let before = await stampNow();
      let first = await lookup(gw.apiPort, 0, before);
      for (let i = 0; i < 10 && first === '503 store_unavailable'; i++) {
        before = await stampNow();
        first = await lookup(gw.apiPort, 0, before);
      }
      expect(first).toBe('200');
      expect(await lookup(gw.apiPort, 0, before)).toBe('401 replayed_digest');
      for (let i = 0; i < 3; i++) expect(await orders(gw.apiPort)).toBe(200);
      await waitForKey(sentinel.replicaPort, `${PREFIX}rl:per-key:key:server`, (v) => v !== null);

      // Steady lookups, each with a digest of its own stamped as it is sent, through the kill.
      const answers: { sent: number; at: number; stamp: number; answer: string }[] = [];
      let stop = false;
      const steady = (async () => {
        for (let i = 1; !stop; i++) {
          const sent = Date.now();
          const stamp = nowS();
          const answer = await lookup(gw.apiPort, i % CUSTOMERS, stamp);
          answers.push({ sent, at: Date.now(), stamp, answer });
          await sleep(50);
        }
      })();
      await sleep(500);
      const killedAt = Date.now();
      await sentinel.killMaster();
      let admittedAt: number | null = null;
      for (let i = 0; i < 600 && admittedAt === null; i++) {
        await sleep(50);
        admittedAt = answers.find((a) => a.sent > killedAt && a.answer === '200')?.at ?? null;
      }
      await sleep(1_000);
      stop = true;
      await steady;

      expect(admittedAt).not.toBeNull();
      await gw.waitFor((l) => String(l.msg).startsWith('state store began again'));
      const epochMs = (await metric(gw.adminPort, 'leadgate_state_store_epoch_seconds')) * 1000;
      const gap = answers.filter((a) => a.sent > killedAt && a.at <= (admittedAt ?? 0));
      const after = answers.filter((a) => a.at > killedAt);
      for (const a of after) {
        if (a.answer === '401 stale_timestamp') expect(a.stamp * 1000).toBeLessThan(epochMs);
        else expect(['200', '503 store_unavailable']).toContain(a.answer);
      }
      const count = (list: typeof after, answer: string) => list.filter((a) => a.answer === answer).length;
      process.stderr.write(
        `[sentinel failover] first admitted digest ${(((admittedAt ?? 0) - killedAt) / 1000).toFixed(2)} s after SIGKILL; ` +
          `during the gap: ${count(gap, '503 store_unavailable')} × 503 store_unavailable, ` +
          `${count(after, '401 stale_timestamp')} × 401 stale_timestamp (stamped before the new master's epoch), ` +
          `${count(after, '200')} × 200 after it\n`,
      );

      // Single use across it: the digest used before is stale now, one used after is used up.
      expect(await lookup(gw.apiPort, 0, before)).toBe('401 stale_timestamp');
      const later = await stampNow();
      expect(await lookup(gw.apiPort, 1, later)).toBe('200');
      expect(await lookup(gw.apiPort, 1, later)).toBe('401 replayed_digest');
      // The rate limit kept its count: two of five left.
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push(await orders(gw.apiPort));
      expect(statuses).toEqual([200, 200, 429, 429]);
      expect(await metric(gw.adminPort, 'leadgate_state_store_restarts_total')).toBeGreaterThanOrEqual(1);
    }, 90_000);
  },
);
