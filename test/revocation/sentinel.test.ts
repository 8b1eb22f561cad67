import jwt from 'jsonwebtoken';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ask } from '../helpers/client.js';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { requires } from '../helpers/optional.js';
import { runCliAsync, type Served, serve } from '../helpers/process.js';
import { hasRedis } from '../helpers/redis.js';
import { MASTER_NAME, startSentinel, type TestSentinel } from '../helpers/sentinel.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

const nowS = () => Math.floor(Date.now() / 1000);
const ISSUED_S = nowS() - 5;
const server = { 'x-apikey': KEYS.server.key, 'x-source': 'web' };
const storefront = (leadId: string) => ({
  'x-apikey': KEYS.storefront.key,
  'x-source': 'web',
  'x-leadtoken': jwt.sign({ lead_id: leadId, iat: ISSUED_S, exp: nowS() + 600 }, KEYS.storefront.secret),
});
const code = async (port: number, headers: Record<string, string>) => {
  const r = await ask(port, { path: '/api/v2/merchant/orders', headers });
  return r.status === 200 ? 'ok' : String(r.json().code);
};
async function eventually(test: () => Promise<boolean>, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await test()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return test();
}

describe.runIf(requires('redis-server', hasRedis, 'apt-get install redis-server'))(
  'revocation on Redis with Sentinel, the master failing over during a revocation',
  () => {
    let sentinel: TestSentinel;
    let upstream: RecordingUpstream;
    let configPath: string;
    const fleet: Served[] = [];
    beforeAll(async () => {
      sentinel = await startSentinel();
      upstream = await startRecordingUpstream();
      const nodes = sentinel.nodes.map((n) => `"${n}"`).join(', ');
      configPath = writeConfig({
        upstream: upstream.url,
        extra: `state: { redis: { sentinel: { master: ${MASTER_NAME}, nodes: [${nodes}] } } }`,
      });
      fleet.push(
        await serve(configPath, { LEADGATE_WATCH: '0' }),
        await serve(configPath, { LEADGATE_WATCH: '0' }),
      );
    }, 60_000);
    afterAll(async () => {
      await Promise.all(fleet.map((s) => s.stop()));
      await upstream.close();
      await sentinel.stop();
    });

    it('stores a revocation made while the master fails over; every gateway applies it and keeps the earlier one', async () => {
      const before = await runCliAsync(['revoke', '--key', 'server', '--config', configPath]);
      expect(before.code).toBe(0);
      expect(before.stdout).toContain('applied on 2 of 2');
      for (const s of fleet) expect(await code(s.apiPort, server)).toBe('revoked_api_key');

      await sentinel.killMaster();
      // the revocation is made at once, while no master answers: the command waits for the new one
      const during = await runCliAsync(['revoke', '--lead', 'lead-failover', '--config', configPath]);
      expect(during.stderr).toBe('');
      expect(during.code).toBe(0);
      expect(during.stdout).toMatch(/^revoked lead lead-failover at /);
      process.stdout.write(`revoke during the failover took ${Math.round(during.ms)} ms\n`);
      // meanwhile and after, the gateways keep what they had, and learn the new one from the new master
      for (const s of fleet) {
        expect(await code(s.apiPort, server)).toBe('revoked_api_key');
        expect(
          await eventually(
            async () => (await code(s.apiPort, storefront('lead-failover'))) === 'revoked_lead_token',
            10_000,
          ),
        ).toBe(true);
        expect(await code(s.apiPort, storefront('lead-other'))).toBe('ok');
      }
      const list = await runCliAsync(['revoke', '--list', '--config', configPath]);
      expect(list.stdout).toMatch(/\nkey +server /);
      expect(list.stdout).toMatch(/\nlead +lead-failover /);
      const lifted = await runCliAsync(['unrevoke', '--key', 'server', '--config', configPath]);
      expect(lifted.code).toBe(0);
      for (const s of fleet) {
        expect(await eventually(async () => (await code(s.apiPort, server)) === 'ok', 5_000)).toBe(true);
      }
    }, 90_000);
  },
);
