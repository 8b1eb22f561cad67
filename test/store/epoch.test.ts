import { createClient } from '@redis/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leadDigest } from '../../src/client/index.js';
import { ask } from '../helpers/client.js';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { requires } from '../helpers/optional.js';
import { type Served, serve } from '../helpers/process.js';
import { hasRedis, startRedis, type TestRedis } from '../helpers/redis.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

/**
 * CONTRACT §9: a store that began again (a Redis restarted without persistence, emptied, or a
 * fresh gateway process with the memory store) has forgotten which digests were used; every
 * gateway refuses a digest stamped before that moment, and accepts one stamped after.
 */
let upstream: RecordingUpstream;
beforeAll(async () => {
  upstream = await startRecordingUpstream();
});
afterAll(() => upstream.close());

const PATH = '/api/v2/merchant/leads/x?customer_id=cust-1';
const nowS = () => Math.floor(Date.now() / 1000);
const lookup = (port: number, ts: number) => {
  const digest = leadDigest(KEYS.storefront.secret, 'cust-1', ts);
  return ask(port, {
    path: PATH,
    headers: {
      'x-apikey': KEYS.storefront.key,
      'x-source': 'web',
      'x-timestamp': String(ts),
      'x-leaddigest': digest,
    },
  });
};
const answer = async (port: number, ts: number) => {
  const r = await lookup(port, ts);
  return r.status === 200 ? 200 : `${r.status} ${r.json().code}`;
};
const metric = async (adminPort: number, name: string) => {
  const text = (await ask(adminPort, { path: '/metrics' })).text;
  return Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? Number.NaN);
};
/**
 * A stamp after everything that happened so far: waits into the next whole second and stamps it
 * (a stamp is whole seconds, so one in the second a store began in is stale too).
 */
const stampNow = async () => {
  await new Promise((r) => setTimeout(r, 1005 - (Date.now() % 1000)));
  return nowS();
};

describe.runIf(requires('redis-server', hasRedis, 'Debian: apt-get install redis-server'))(
  'a Redis that begins again',
  () => {
    let redis: TestRedis;
    let a: Served;
    let b: Served;
    beforeAll(async () => {
      redis = await startRedis();
      const file = writeConfig({
        upstream: upstream.url,
        extra: `state: { redis: { url: "${redis.url}", key_prefix: "epoch:" } }
digest: { single_use: true }`,
      });
      [a, b] = await Promise.all([serve(file), serve(file)]);
    });
    afterAll(async () => {
      await Promise.all([a?.stop(), b?.stop()]);
      await redis?.stop();
    });

    it('restarted empty: both gateways refuse a digest used before as stale, and accept a new one', async () => {
      const used = await stampNow();
      expect(await answer(a.apiPort, used)).toBe(200);
      expect(await answer(b.apiPort, used)).toBe('401 replayed_digest');
      await redis.kill();
      await redis.restart();
      // The digest used before the restart: the store no longer knows it was used.
      let first: string | number = 0;
      for (let i = 0; i < 50; i++) {
        first = await answer(a.apiPort, used);
        if (first !== '503 store_unavailable') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(first).toBe('401 stale_timestamp');
      expect(await answer(b.apiPort, used)).toBe('401 stale_timestamp');
      // A digest stamped after the store began again is accepted once.
      const fresh = await stampNow();
      expect(await answer(b.apiPort, fresh)).toBe(200);
      expect(await answer(a.apiPort, fresh)).toBe('401 replayed_digest');
      for (const gw of [a, b]) {
        await gw.waitFor((l) => String(l.msg).startsWith('state store began again'));
        expect(await metric(gw.adminPort, 'leadgate_state_store_restarts_total')).toBeGreaterThanOrEqual(1);
        const epochS = await metric(gw.adminPort, 'leadgate_state_store_epoch_seconds');
        expect(epochS).toBeGreaterThan(used - 10);
        expect(epochS).toBeLessThanOrEqual(nowS() + 1);
      }
    });

    it('forgets nothing across a reconnect to the same run (a digest used before is still replayed)', async () => {
      const used = await stampNow();
      expect(await answer(a.apiPort, used)).toBe(200);
      const client = createClient({ url: redis.url });
      await client.connect();
      try {
        await client.clientKill([
          { filter: 'TYPE', type: 'normal' },
          { filter: 'SKIPME', skipMe: true },
        ]);
      } finally {
        client.destroy();
      }
      let again: string | number = 0;
      for (let i = 0; i < 50; i++) {
        again = await answer(a.apiPort, used);
        if (again !== '503 store_unavailable') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(again).toBe('401 replayed_digest');
    });

    it('emptied without a restart (FLUSHALL): the same, seen on the next claim', async () => {
      const used = await stampNow();
      expect(await answer(a.apiPort, used)).toBe(200);
      const restartsBefore = await metric(b.adminPort, 'leadgate_state_store_restarts_total');
      const client = createClient({ url: redis.url });
      await client.connect();
      try {
        await client.flushAll();
      } finally {
        client.destroy();
      }
      expect(await answer(b.apiPort, used)).toBe('401 stale_timestamp');
      expect(await answer(a.apiPort, used)).toBe('401 stale_timestamp');
      expect(await metric(b.adminPort, 'leadgate_state_store_restarts_total')).toBe(restartsBefore + 1);
      expect(await answer(a.apiPort, await stampNow())).toBe(200);
    });
  },
);

describe('the memory store of a fresh gateway process', () => {
  it('refuses a digest used at the process before it, and accepts a new one', async () => {
    const file = writeConfig({ upstream: upstream.url, extra: 'digest: { single_use: true }' });
    const first = await serve(file);
    const used = await stampNow();
    try {
      expect(await answer(first.apiPort, used)).toBe(200);
      expect(await answer(first.apiPort, used)).toBe('401 replayed_digest');
    } finally {
      await first.stop();
    }
    const second = await serve(file);
    try {
      expect(await answer(second.apiPort, used)).toBe('401 stale_timestamp');
      const fresh = await stampNow();
      expect(await answer(second.apiPort, fresh)).toBe(200);
      expect(await metric(second.adminPort, 'leadgate_state_store_epoch_seconds')).toBeGreaterThan(used - 10);
    } finally {
      await second.stop();
    }
  });
});
