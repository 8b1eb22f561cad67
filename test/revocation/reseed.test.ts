import jwt from 'jsonwebtoken';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leadHash } from '../../src/revocation/index.js';
import { ask } from '../helpers/client.js';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { requires } from '../helpers/optional.js';
import { runCliAsync, type Served, serve } from '../helpers/process.js';
import { hasRedis, startRedis, type TestRedis } from '../helpers/redis.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

const nowS = () => Math.floor(Date.now() / 1000);
/** Issued before the revocation: covered by it. */
const ISSUED_S = nowS() - 5;
const LEAD = 'reseed-lead-1';
const leadToken = () => jwt.sign({ lead_id: LEAD, iat: ISSUED_S, exp: nowS() + 600 }, KEYS.storefront.secret);
const server = { 'x-apikey': KEYS.server.key, 'x-source': 'web' };
const storefront = () => ({ 'x-apikey': KEYS.storefront.key, 'x-source': 'web', 'x-leadtoken': leadToken() });
const orders = (port: number, headers: Record<string, string>) =>
  ask(port, { path: '/api/v2/merchant/orders', headers });
/** A refusal's code, or the status of what was not one (a 200's body is not problem+json). */
const code = async (answer: Promise<{ status: number; json<T>(): T }>) => {
  const r = await answer;
  return r.status === 401 ? r.json<{ code: string }>().code : `status ${r.status}`;
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const metric = (text: string, line: RegExp) => Number(line.exec(text)?.[1] ?? Number.NaN);

describe.runIf(requires('redis-server', hasRedis, 'apt-get install redis-server'))(
  'a Redis that restarts empty lifts no revocation: three gateways as processes (one a pool of 2 workers), the CLI as a process',
  () => {
    let redis: TestRedis;
    let upstream: RecordingUpstream;
    let configPath: string;
    const fleet: Served[] = [];
    beforeAll(async () => {
      redis = await startRedis();
      upstream = await startRecordingUpstream();
      const state = `state: { redis: { url: "${redis.url}" } }`;
      configPath = writeConfig({ upstream: upstream.url, extra: state });
      const poolPath = writeConfig({ upstream: upstream.url, extra: `${state}\nworkers: 2` });
      const env = { LEADGATE_WATCH: '0' };
      fleet.push(
        await serve(configPath, env),
        await serve(configPath, env),
        await serve(poolPath, env, 20_000),
      );
    }, 60_000);
    afterAll(async () => {
      await Promise.all(fleet.map((s) => s.stop()));
      await upstream?.close();
      await redis?.stop();
    });
    const cli = (...args: string[]) => runCliAsync([...args, '--config', configPath]);
    /** Each gateway, each worker of the pool in turn, refuses the key and the lead's old token. */
    const everyGatewayRefuses = async () => {
      for (const s of fleet) {
        for (let i = 0; i < 4; i++) {
          expect(await code(orders(s.apiPort, server))).toBe('revoked_api_key');
          expect(await code(orders(s.apiPort, storefront()))).toBe('revoked_lead_token');
        }
      }
    };

    /** The lead's revocation reaches every gateway within a few seconds (it is new to them). */
    const waitEveryGatewayRefuses = async () => {
      const until = Date.now() + 5_000;
      for (;;) {
        try {
          return await everyGatewayRefuses();
        } catch (err) {
          if (Date.now() > until) throw err;
          await sleep(100);
        }
      }
    };

    it('keeps refusing through the restart, writes the set back once, and unrevoke still lifts it everywhere', async () => {
      const key = await cli('revoke', '--key', 'server', '--reason', 'leaked in a ticket', '--by', 'ci');
      expect(key.code).toBe(0);
      expect(key.stdout).toContain('applied on 3 of 3');
      const lead = await cli('revoke', '--lead', LEAD, '--by', 'ci');
      expect(lead.code).toBe(0);
      expect(lead.stdout).toContain('applied on 3 of 3');
      const before = await cli('revoke', '--list');
      expect(before.stdout).toContain('leaked in a ticket');
      await everyGatewayRefuses();
      for (const s of fleet) {
        const metrics = (await ask(s.adminPort, { path: '/metrics' })).text;
        expect(metrics).toContain('leadgate_revocation_store_reseeds_total{result="written"} 0');
        expect(metrics).toContain('leadgate_revocation_store_reseeds_total{result="found_written"} 0');
      }

      await redis.kill();
      await sleep(600);
      await everyGatewayRefuses();
      await redis.restart(); // the same port, empty: no persistence
      const restartedAt = Date.now();

      // from the restart on, every answer is still a refusal, until the store holds the set again
      let listed = '';
      const until = Date.now() + 15_000;
      while (Date.now() < until) {
        await everyGatewayRefuses();
        const list = await cli('revoke', '--list');
        if (list.code === 0 && list.stdout !== 'no revocations in force\n') {
          listed = list.stdout;
          break;
        }
        await sleep(100);
      }
      // the entries as they were stored: their time, by, reason, a lead's expiry
      expect(listed).toBe(before.stdout);
      await everyGatewayRefuses();

      // written back by exactly one gateway; each gateway that saw it logged it, naming no credential
      let written = 0;
      for (const s of fleet) {
        const metrics = (await ask(s.adminPort, { path: '/metrics' })).text;
        expect(metrics).toContain('leadgate_revocations{kind="key"} 1');
        expect(metrics).toContain('leadgate_revocations{kind="lead"} 1');
        written += metric(metrics, /^leadgate_revocation_store_reseeds_total\{result="written"\} (\S+)$/m);
        expect(metric(metrics, /^leadgate_revocation_sync_age_seconds (\S+)$/m)).toBeLessThan(5);
        const said = s.lines.filter((l) => String(l.msg).startsWith('revocation store began again'));
        for (const l of said) {
          expect(l.key_names).toEqual(['server']);
          expect(l.lead_sha256).toEqual([leadHash(LEAD)]);
        }
        expect(s.lines.some((l) => l.msg === 'revocation lifted')).toBe(false);
        const text = JSON.stringify(s.lines);
        expect(text).not.toContain(KEYS.server.key);
        expect(text).not.toContain(LEAD);
      }
      expect(written).toBe(1);
      const wrote = fleet
        .flatMap((s) => s.lines)
        .find((l) => String(l.msg).startsWith('revocation store began again') && l.written === true);
      const ms = Date.parse(String(wrote?.time)) - restartedAt;
      process.stdout.write(
        `revocation set written back ${ms} ms after redis-server restarted empty (its "Ready" line → the writing gateway's log line)\n`,
      );

      // unrevoke works on the set written back, on every gateway
      expect((await cli('unrevoke', '--key', 'server')).stdout).toContain('applied on 3 of 3');
      expect((await cli('unrevoke', '--lead', LEAD)).stdout).toContain('applied on 3 of 3');
      for (const s of fleet) {
        for (let i = 0; i < 4; i++) {
          expect((await orders(s.apiPort, server)).status).toBe(200);
          expect((await orders(s.apiPort, storefront())).status).toBe(200);
        }
      }
      expect((await cli('revoke', '--list')).stdout).toBe('no revocations in force\n');
    }, 90_000);

    it('an operator who revokes on the empty store before any gateway wrote the set back lifts nothing either', async () => {
      expect((await cli('revoke', '--key', 'server')).stdout).toContain('applied on 3 of 3');
      // the syncing processes are held still so that the operator's write comes first
      for (const s of fleet) s.child.kill('SIGSTOP');
      try {
        await redis.kill();
        await redis.restart();
        // no gateway can write the set back yet: --list waits a moment for one, then says so
        const empty = await cli('revoke', '--list');
        expect(empty.code).toBe(0);
        expect(empty.stdout).toBe('no revocations in force\n');
        expect(empty.stderr).toContain('the store began again empty');
        expect((await cli('revoke', '--lead', LEAD)).code).toBe(0);
      } finally {
        for (const s of fleet) s.child.kill('SIGCONT');
      }
      const keyRefused = async () => {
        for (const s of fleet) {
          for (let i = 0; i < 4; i++) expect(await code(orders(s.apiPort, server))).toBe('revoked_api_key');
        }
      };
      const until = Date.now() + 15_000;
      let listed = '';
      while (Date.now() < until) {
        await keyRefused();
        listed = (await cli('revoke', '--list')).stdout;
        if (listed.includes('server')) break;
        await sleep(100);
      }
      expect(listed).toMatch(/^key\s+server\s/m);
      // the gateways found the operator's version (serial 1 again) and wrote the key back: once
      let written = 0;
      for (const s of fleet) {
        const metrics = (await ask(s.adminPort, { path: '/metrics' })).text;
        written += metric(metrics, /^leadgate_revocation_store_reseeds_total\{result="written"\} (\S+)$/m);
      }
      expect(written).toBe(2); // one in the test before, one here
      expect(listed).toMatch(new RegExp(`^lead\\s+${LEAD}\\s`, 'm'));
      await waitEveryGatewayRefuses();
      expect((await cli('unrevoke', '--key', 'server')).code).toBe(0);
      expect((await cli('unrevoke', '--lead', LEAD)).code).toBe(0);
      for (const s of fleet) {
        for (let i = 0; i < 4; i++) expect((await orders(s.apiPort, server)).status).toBe(200);
      }
    }, 90_000);
  },
);
