import jwt from 'jsonwebtoken';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitUntil } from '../../src/util/wait.js';
import { ask } from '../helpers/client.js';
import { digestLookup, KEYS, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { requires } from '../helpers/optional.js';
import { runCliAsync } from '../helpers/process.js';
import { hasRedis, startRedis, type TestRedis } from '../helpers/redis.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

const PREFIX = 'revocation-test:';

async function waitUntilAsync(test: () => Promise<boolean>, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await test()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return test();
}
const nowS = () => Math.floor(Date.now() / 1000);
const lookupPath = '/api/v2/merchant/leads/lead-1';

/** A storefront lead token for lead-1 with the given claims (iat unless `iat: undefined`). */
const token = (claims: { iat?: number; exp: number }) =>
  // jsonwebtoken drops a given iat under noTimestamp, and adds its own without it
  jwt.sign({ lead_id: 'lead-1', ...claims }, KEYS.storefront.secret, {
    algorithm: 'HS256',
    noTimestamp: claims.iat === undefined,
  });
const storefront = (t: string) => ({ 'x-apikey': KEYS.storefront.key, 'x-source': 'web', 'x-leadtoken': t });
const server = { 'x-apikey': KEYS.server.key, 'x-source': 'web' };

describe.runIf(requires('redis-server', hasRedis, 'apt-get install redis-server'))(
  'revocation with one Redis: the CLI as a process, a gateway applying it over HTTP',
  () => {
    let redis: TestRedis;
    let upstream: RecordingUpstream;
    let configPath: string;
    beforeAll(async () => {
      redis = await startRedis();
      upstream = await startRecordingUpstream();
      configPath = writeConfig({
        upstream: upstream.url,
        extra: `state: { redis: { url: "${redis.url}", key_prefix: "${PREFIX}" } }
forward_auth: { listen: { host: 127.0.0.1, port: 0 } }`,
      });
    });
    afterAll(async () => {
      await upstream.close();
      await redis.stop();
    });
    const cli = (...args: string[]) => runCliAsync([...args, '--config', configPath]);

    it('revokes a key everywhere it is presented, lists it, and lifts it again', async () => {
      const gw = await startTestGateway(configPath);
      try {
        const orders = () => ask(gw.apiPort, { path: '/api/v2/merchant/orders', headers: server });
        expect((await orders()).status).toBe(200);
        const revoked = await cli(
          'revoke',
          '--key',
          'server',
          '--reason',
          'leaked in a ticket',
          '--by',
          'alice',
        );
        expect(revoked.stderr).toBe('');
        expect(revoked.code).toBe(0);
        expect(revoked.stdout).toMatch(/^revoked key server at \S+Z by alice \(reason: leaked in a ticket\)/);
        expect(revoked.stdout).toContain('applied on 1 of 1 gateway(s)');
        // applied (the CLI waited for it): refused on the API listener, the lookup, forward-auth
        const refused = await orders();
        expect(refused.status).toBe(401);
        expect(refused.headers['content-type']).toBe('application/problem+json');
        expect(refused.json().code).toBe('revoked_api_key');
        expect(refused.text).not.toContain(KEYS.server.key);
        const lookup = await ask(gw.apiPort, { path: `${lookupPath}`, headers: server });
        expect(lookup.json().code).toBe('revoked_api_key');
        const auth = await ask(gw.forwardAuthPort ?? 0, {
          path: '/_auth',
          headers: { ...server, 'x-original-method': 'GET', 'x-original-uri': '/api/v2/merchant/orders' },
        });
        expect(auth.status).toBe(401);
        expect(auth.json().code).toBe('revoked_api_key');
        // other keys are not touched
        const other = await ask(gw.apiPort, {
          path: '/api/v2/merchant/orders',
          headers: storefront(token({ iat: nowS(), exp: nowS() + 600 })),
        });
        expect(other.status).toBe(200);

        const list = await cli('revoke', '--list');
        expect(list.code).toBe(0);
        expect(list.stdout).toMatch(
          /^KIND +NAME +REVOKED AT +BY +LIFTS ITSELF AT +REASON\nkey +server +\S+Z +alice +- +leaked in a ticket\n$/,
        );

        const metrics = (await ask(gw.adminPort, { path: '/metrics' })).text;
        expect(metrics).toContain('leadgate_revocations{kind="key"} 1');
        expect(metrics).toContain('leadgate_revocations{kind="lead"} 0');
        expect(metrics).toMatch(/leadgate_revocation_sync_age_seconds 0(\.\d+)?\n/);
        expect(metrics).toContain(
          'leadgate_requests_total{status="401",code="revoked_api_key",key="server"}',
        );
        const line = gw.logs.lines
          .map((l) => JSON.parse(l) as Record<string, unknown>)
          .find((l) => l.msg === 'revocation applied');
        expect(line).toMatchObject({ key_name: 'server', kind: 'key', by: 'alice' });

        const lifted = await cli('unrevoke', '--key', 'server');
        expect(lifted.code).toBe(0);
        expect(lifted.stdout).toContain('lifted the revocation of key server');
        expect(lifted.stdout).toContain('applied on 1 of 1');
        expect((await orders()).status).toBe(200);
        const again = await cli('unrevoke', '--key', 'server');
        expect(again.code).toBe(0);
        expect(again.stdout).toContain('key server was not revoked: nothing changed');
        expect(gw.logs.text).not.toContain(KEYS.server.key);
      } finally {
        await gw.close();
      }
    });

    it("revokes a lead's tokens issued until the revocation, and no token issued after it", async () => {
      const gw = await startTestGateway(configPath);
      try {
        const get = (t: string) =>
          ask(gw.apiPort, { path: '/api/v2/merchant/orders', headers: storefront(t) });
        const before = token({ iat: nowS() - 5, exp: nowS() + 600 });
        // no iat: counts as issued at exp − ttl_s (3600): here 3590 s before exp, so before T
        const noIatBefore = token({ exp: nowS() + 3590 });
        // from the lookup (Path B): the gateway mints it, with iat = now
        const minted = (await ask(gw.apiPort, digestLookup())).json<{ lead_token: string }>().lead_token;
        for (const t of [before, noIatBefore, minted]) expect((await get(t)).status).toBe(200);

        // a reason is kept to one line of --list
        const revoked = await cli('revoke', '--lead', 'lead-1', '--reason', 'account\ntaken over');
        expect(revoked.code).toBe(0);
        const at = Date.parse(/ at (\S+Z) by /.exec(revoked.stdout)?.[1] ?? '');
        expect(at).toBeGreaterThan(Date.now() - 30_000);
        expect(revoked.stdout).toContain(`lifts itself at ${new Date(at + 3_660_000).toISOString()}`);
        const atS = Math.floor(at / 1000);
        for (const t of [before, noIatBefore, minted]) {
          const r = await get(t);
          expect(r.status).toBe(401);
          expect(r.json().code).toBe('revoked_lead_token');
        }
        // the lookup with an old token is refused too; the forward-auth listener as well
        const lookup = await ask(gw.apiPort, { path: lookupPath, headers: storefront(before) });
        expect(lookup.json().code).toBe('revoked_lead_token');
        const auth = await ask(gw.forwardAuthPort ?? 0, {
          path: '/_auth',
          headers: {
            ...storefront(before),
            'x-original-method': 'GET',
            'x-original-uri': '/api/v2/merchant/orders',
          },
        });
        expect(auth.json().code).toBe('revoked_lead_token');
        // issued after T: a token with a later iat, one without iat issued later, a new lookup
        expect((await get(token({ iat: atS + 1, exp: atS + 600 }))).status).toBe(200);
        expect((await get(token({ exp: nowS() + 3650 }))).status).toBe(200);
        await waitUntil(() => nowS() > atS, 2_000);
        const fresh = await ask(gw.apiPort, digestLookup('cust-1', nowS()));
        expect(fresh.status).toBe(200);
        expect((await get(fresh.json<{ lead_token: string }>().lead_token)).status).toBe(200);
        // another lead is not touched
        const lead2 = jwt.sign({ lead_id: 'lead-2', iat: atS - 5, exp: atS + 600 }, KEYS.storefront.secret);
        expect((await get(lead2)).status).toBe(200);

        const line = gw.logs.lines
          .map((l) => JSON.parse(l) as Record<string, unknown>)
          .find((l) => l.msg === 'revocation applied');
        expect(line).toMatchObject({ kind: 'lead', lead_sha256: expect.stringMatching(/^[0-9a-f]{16}$/) });
        const own = gw.logs.lines.filter((l) => l.includes('"component":"revocation"'));
        expect(own.length).toBeGreaterThan(0);
        expect(own.join('\n')).not.toContain('lead-1');
        const list = await cli('revoke', '--list');
        expect(list.stdout).toMatch(/\nlead +lead-1 +\S+Z +\S+ +\S+Z +account taken over\n/);
        expect((await cli('unrevoke', '--lead', 'lead-1')).code).toBe(0);
        expect((await get(before)).status).toBe(200);
      } finally {
        await gw.close();
      }
    });

    it('says what to do without state.redis (exit 2), and exits 1 when the store cannot be reached', async () => {
      const memory = writeConfig({ upstream: upstream.url });
      const none = await runCliAsync(['revoke', '--key', 'server', '--config', memory]);
      expect(none.code).toBe(2);
      expect(none.stderr).toContain('has no state.redis');
      expect(none.stderr).toContain('Remove the key from the config instead');
      const typo = await cli('revoke', '--key', 'srever');
      expect(typo.code).toBe(2);
      expect(typo.stderr).toContain('has no key named "srever"');
      expect((await cli('revoke', '--lead', 'lead 1')).code).toBe(2);
      expect((await cli('revoke', '--key', 'server', '--lead', 'lead-1')).code).toBe(2);

      const { freePort } = await import('../helpers/optional.js');
      const nothing = writeConfig({
        upstream: upstream.url,
        extra: `state: { redis: { url: "redis://127.0.0.1:${await freePort()}" } }`,
      });
      const down = await runCliAsync(['revoke', '--key', 'server', '--config', nothing]);
      expect(down.code).toBe(1);
      expect(down.stderr).toContain('the state store cannot be reached');
      expect(down.stdout).toBe('');
    });

    it('keeps the set it had while the store is down; one that could not load serves with none and keeps trying', async () => {
      const gw = await startTestGateway(configPath);
      try {
        expect((await cli('revoke', '--key', 'server')).code).toBe(0);
        const orders = () => ask(gw.apiPort, { path: '/api/v2/merchant/orders', headers: server });
        expect((await orders()).json().code).toBe('revoked_api_key');
        await redis.kill();
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        expect((await orders()).json().code).toBe('revoked_api_key');
        const metrics = (await ask(gw.adminPort, { path: '/metrics' })).text;
        const age = Number(/^leadgate_revocation_sync_age_seconds (\S+)$/m.exec(metrics)?.[1]);
        expect(age).toBeGreaterThan(1);
        expect(gw.logs.text).toContain(
          'revocation set not confirmed with the state store: applying the set last loaded',
        );

        // a gateway that starts now cannot load it: it serves with none, says so, keeps trying
        const late = await startTestGateway(configPath);
        try {
          const said = () => late.logs.text.includes('revocation set could not be loaded: serving with none');
          expect(await waitUntilAsync(async () => said(), 5_000)).toBe(true);
          const r = await ask(late.apiPort, { path: '/api/v2/merchant/orders', headers: server });
          expect(r.status).toBe(200);
          await redis.restart(); // empty: a store restarted without persistence lost the set
          expect((await cli('revoke', '--key', 'server')).code).toBe(0);
          // both reconnect with backoff (up to 1 s between tries), then apply it
          for (const g of [gw, late]) {
            const answer = () => ask(g.apiPort, { path: '/api/v2/merchant/orders', headers: server });
            expect(await waitUntilAsync(async () => (await answer()).status === 401, 5_000)).toBe(true);
            expect((await answer()).json().code).toBe('revoked_api_key');
          }
          expect(
            await waitUntilAsync(
              async () => late.logs.text.includes('revocation set confirmed with the state store again'),
              5_000,
            ),
          ).toBe(true);
        } finally {
          await late.close();
        }
        expect((await cli('unrevoke', '--key', 'server')).code).toBe(0);
      } finally {
        await gw.close();
      }
    });
  },
);

describe.runIf(requires('redis-server', hasRedis, 'apt-get install redis-server'))(
  'a lead revocation removes itself once nothing it covers can be valid',
  () => {
    it('lifts itself after ttl_s + max_skew_s, in the gateway and in the store', async () => {
      const redis = await startRedis();
      const upstream = await startRecordingUpstream();
      const configPath = writeConfig({
        upstream: upstream.url,
        extra: `state: { redis: { url: "${redis.url}" } }
lead_token: { ttl_s: 2, max_skew_s: 0 }`,
      });
      const gw = await startTestGateway(configPath);
      try {
        const t = jwt.sign({ lead_id: 'lead-1', iat: nowS(), exp: nowS() + 2 }, KEYS.storefront.secret);
        expect((await runCliAsync(['revoke', '--lead', 'lead-1', '--config', configPath])).code).toBe(0);
        expect(
          (await ask(gw.apiPort, { path: '/api/v2/merchant/orders', headers: storefront(t) })).json().code,
        ).toBe('revoked_lead_token');
        await new Promise((resolve) => setTimeout(resolve, 3_200));
        const list = await runCliAsync(['revoke', '--list', '--config', configPath]);
        expect(list.stdout).toBe('no revocations in force\n');
        const metrics = (await ask(gw.adminPort, { path: '/metrics' })).text;
        expect(metrics).toContain('leadgate_revocations{kind="lead"} 0');
        const { createClient } = await import('@redis/client');
        const client = createClient({ url: redis.url });
        await client.connect();
        try {
          expect(await client.hLen('leadgate:{revocations}:entries')).toBe(0);
        } finally {
          client.destroy();
        }
      } finally {
        await gw.close();
        await upstream.close();
        await redis.stop();
      }
    });
  },
);
