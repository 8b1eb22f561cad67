import { createClient } from '@redis/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leadDigest } from '../../src/client/index.js';
import { type Answer, ask } from '../helpers/client.js';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { freePort, requires } from '../helpers/optional.js';
import { type Served, serve } from '../helpers/process.js';
import { hasRedis, startRedis, type TestRedis } from '../helpers/redis.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

let upstream: RecordingUpstream;
beforeAll(async () => {
  upstream = await startRecordingUpstream();
});
afterAll(() => upstream.close());

const PREFIX = 'lgtest:';
const config = (redisUrl: string, digest = '{ single_use: true }') =>
  writeConfig({
    upstream: upstream.url,
    extra: `state: { redis: { url: "${redisUrl}", timeout_ms: 50, key_prefix: "${PREFIX}" } }
digest: ${digest}
rate_limits:
  policies:
    - { name: per-key, by: key, limit: 5, window_s: 60, keys: [server] }`,
  });

const now = () => Math.floor(Date.now() / 1000);
let used = 0;
/**
 * A lookup with a digest never used before: each one a second further ahead, within the skew, so
 * it is stamped after any restart of the store in this test (else it would be stale).
 */
function freshLookup() {
  const ts = now() + 2 + (++used % 250);
  return { path: '/api/v2/merchant/leads/x?customer_id=cust-1', headers: digestHeaders('cust-1', ts) };
}
const digestHeaders = (customerId: string, ts: number, upper = false) => {
  const d = leadDigest(KEYS.storefront.secret, customerId, ts);
  return {
    'x-apikey': KEYS.storefront.key,
    'x-source': 'web',
    'x-timestamp': String(ts),
    'x-leaddigest': upper ? d.toUpperCase() : d,
  };
};
const server = { 'x-apikey': KEYS.server.key, 'x-source': 'web' };
const orders = (port: number) => ask(port, { path: '/api/v2/merchant/orders', headers: server });
const metric = async (adminPort: number, line: RegExp) => {
  const text = (await ask(adminPort, { path: '/metrics' })).text;
  return Number(line.exec(text)?.[1] ?? Number.NaN);
};
const ERRORS = /^leadgate_state_store_errors_total\{op="spend"\} (\d+)/m;

describe.runIf(requires('redis-server', hasRedis, 'Debian: apt-get install redis-server'))(
  'state on a real Redis',
  () => {
    let redis: TestRedis;
    beforeAll(async () => {
      redis = await startRedis();
    });
    afterAll(() => redis.stop());

    describe('two gateway processes sharing one Redis', () => {
      let a: Served;
      let b: Served;
      beforeAll(async () => {
        const file = config(redis.url);
        [a, b] = await Promise.all([serve(file), serve(file)]);
      });
      afterAll(async () => {
        await Promise.all([a.stop(), b.stop()]);
      });

      it('refuses at one a digest used at the other, also in upper case', async () => {
        const ts = now() + 1; // after the store began (a stamp in its first second is stale)
        const path = '/api/v2/merchant/leads/x?customer_id=cust-1';
        const first = await ask(a.apiPort, { path, headers: digestHeaders('cust-1', ts) });
        expect(first.status).toBe(200);
        const again = await ask(b.apiPort, { path, headers: digestHeaders('cust-1', ts) });
        expect([again.status, again.json().code]).toEqual([401, 'replayed_digest']);
        const upper = await ask(b.apiPort, { path, headers: digestHeaders('cust-1', ts, true) });
        expect(upper.json().code).toBe('replayed_digest');
      });

      it('holds a policy of 5 per window across both', async () => {
        const answers: Answer[] = [];
        for (let i = 0; i < 10; i++) answers.push(await orders(i % 2 === 0 ? a.apiPort : b.apiPort));
        expect(answers.filter((r) => r.status === 200)).toHaveLength(5);
        expect(answers.slice(5).every((r) => r.status === 429)).toBe(true);
        expect(answers[9]?.headers['retry-after']).toBe('12');
      });

      it('writes prefixed keys that hold no digest and expire', async () => {
        const client = createClient({ url: redis.url });
        await client.connect();
        try {
          const keys = await client.keys(`${PREFIX}*`);
          expect(keys).toContain(`${PREFIX}rl:per-key:key:server`);
          const digests = keys.filter((k) => k.startsWith(`${PREFIX}digest:storefront:`));
          expect(digests.length).toBeGreaterThan(0);
          for (const k of digests) expect(k).toMatch(/^lgtest:digest:storefront:[0-9a-f]{64}$/);
          const used = leadDigest(KEYS.storefront.secret, 'cust-1', now());
          expect(keys.join(' ')).not.toContain(used.slice(0, 16));
          const ttl = await client.pTTL(digests[0] as string);
          expect(ttl).toBeGreaterThan(0);
          expect(ttl).toBeLessThanOrEqual(600_000); // 2 × max_skew_s
        } finally {
          client.destroy();
        }
      });
    });

    describe('Redis failing under a running gateway', () => {
      let gw: Served;
      beforeAll(async () => {
        await redis.restart().catch(() => {});
        gw = await serve(config(redis.url));
      });
      afterAll(() => gw.stop());

      it('answers 503 for single use, falls back to local buckets without waiting on Redis, and returns to Redis', async () => {
        const before = await ask(gw.apiPort, freshLookup());
        expect(before.status).toBe(200);
        redis.pause(); // connected, never answering: every call runs into timeout_ms
        const lookups: Answer[] = [];
        for (let i = 0; i < 4; i++) lookups.push(await ask(gw.apiPort, freshLookup()));
        for (const r of lookups) {
          expect([r.status, r.json().code, r.headers['retry-after']]).toEqual([
            503,
            'store_unavailable',
            '1',
          ]);
        }
        await gw.waitFor((l) => String(l.msg).startsWith('state store down'));
        // Paused after 3 failures: rate-limited requests use local buckets, Redis is not asked.
        const errorsWhenOpen = await metric(gw.adminPort, ERRORS);
        const limited: Answer[] = [];
        for (let i = 0; i < 8; i++) limited.push(await orders(gw.apiPort));
        expect(limited.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
        expect(limited[0]?.headers.ratelimit).toBe('"per-key";r=4;t=12');
        expect(await metric(gw.adminPort, ERRORS)).toBe(errorsWhenOpen);
        expect(await metric(gw.adminPort, /^leadgate_state_store_up (\d+)/m)).toBe(0);
        expect((await ask(gw.adminPort, { path: '/readyz' })).status).toBe(200);

        redis.resume();
        let back: Answer | null = null;
        for (let i = 0; i < 60 && back?.status !== 200; i++) {
          back = await ask(gw.apiPort, freshLookup());
          if (back.status !== 200) await new Promise((r) => setTimeout(r, 200));
        }
        expect(back?.status).toBe(200);
        await gw.waitFor((l) => l.msg === 'state store answers again');
        expect(await metric(gw.adminPort, /^leadgate_state_store_up (\d+)/m)).toBe(1);
      });

      it('survives Redis killed and started again (empty), refusing meanwhile', async () => {
        await redis.kill();
        const down = await ask(gw.apiPort, freshLookup());
        expect(down.json().code).toBe('store_unavailable');
        await redis.restart();
        let back: Answer | null = null;
        for (let i = 0; i < 60 && back?.status !== 200; i++) {
          back = await ask(gw.apiPort, freshLookup());
          if (back.status !== 200) await new Promise((r) => setTimeout(r, 200));
        }
        expect(back?.status).toBe(200);
      });
    });
  },
);

describe('state.redis unreachable from the start', () => {
  it('starts and stays ready; on_store_error allow and deny do as they say', async () => {
    const nothing = `redis://127.0.0.1:${await freePort()}`;
    const gw = await startTestGateway(config(nothing, '{ single_use: true, on_store_error: allow }'));
    try {
      expect((await ask(gw.adminPort, { path: '/readyz' })).status).toBe(200);
      expect(gw.logs.text).toContain('state store not reachable at start');
      expect((await ask(gw.apiPort, freshLookup())).status).toBe(200);
      const limited = await orders(gw.apiPort);
      expect(limited.status).toBe(200);
      expect(limited.headers.ratelimit).toBe('"per-key";r=4;t=12');
      const text = (await ask(gw.adminPort, { path: '/metrics' })).text;
      expect(text).toMatch(/leadgate_state_store_fallbacks_total\{use="digest",action="allow"\} 1/);
      expect(text).toMatch(/leadgate_state_store_fallbacks_total\{use="rate_limit",action="local"\} 1/);
    } finally {
      await gw.close();
    }
    const deny = await startTestGateway(
      writeConfig({
        upstream: upstream.url,
        extra: `state: { redis: { url: "${nothing}" } }
rate_limits:
  on_store_error: deny
  policies: [{ name: per-key, by: key, limit: 5, window_s: 60 }]`,
      }),
    );
    try {
      const r = await orders(deny.apiPort);
      expect([r.status, r.json().code, r.headers['retry-after']]).toEqual([503, 'store_unavailable', '1']);
    } finally {
      await deny.close();
    }
  });
});
