import jwt from 'jsonwebtoken';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leadHash } from '../../src/revocation/index.js';
import { ask } from '../helpers/client.js';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { requires } from '../helpers/optional.js';
import { runCliAsync, type Served, serve } from '../helpers/process.js';
import { hasRedis, startRedis, type TestRedis } from '../helpers/redis.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

const ROUNDS = 20;
const nowS = () => Math.floor(Date.now() / 1000);
const orders = (port: number, headers: Record<string, string>) =>
  ask(port, { path: '/api/v2/merchant/orders', headers });
/** Tokens issued before every revocation of this file. */
const ISSUED_S = nowS() - 5;
const leadToken = (leadId: string) =>
  jwt.sign({ lead_id: leadId, iat: ISSUED_S, exp: nowS() + 600 }, KEYS.storefront.secret);
const storefront = (leadId: string) => ({
  'x-apikey': KEYS.storefront.key,
  'x-source': 'web',
  'x-leadtoken': leadToken(leadId),
});

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
};

describe.runIf(requires('redis-server', hasRedis, 'apt-get install redis-server'))(
  'revocation across a fleet: three gateways as processes (one a pool of 2 workers), one Redis, the CLI as a process',
  () => {
    let redis: TestRedis;
    let upstream: RecordingUpstream;
    let configPath: string;
    let poolPath: string;
    const fleet: Served[] = [];
    beforeAll(async () => {
      redis = await startRedis();
      upstream = await startRecordingUpstream();
      const state = `state: { redis: { url: "${redis.url}" } }`;
      configPath = writeConfig({ upstream: upstream.url, extra: state });
      poolPath = writeConfig({ upstream: upstream.url, extra: `${state}\nworkers: 2` });
      const env = { LEADGATE_WATCH: '0' };
      fleet.push(
        await serve(configPath, env),
        await serve(configPath, env),
        await serve(poolPath, env, 20_000),
      );
    }, 60_000);
    afterAll(async () => {
      await Promise.all(fleet.map((s) => s.stop()));
      await upstream.close();
      await redis.stop();
    });

    it(`applies each of ${ROUNDS} revocations on every gateway (median and worst reported), each worker of a pool included`, async () => {
      const spans: number[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        const lead = `fleet-lead-${i}`;
        const r = await runCliAsync(['revoke', '--lead', lead, '--config', configPath, '--by', 'ci']);
        expect(r.code).toBe(0);
        expect(r.stdout).toContain('applied on 3 of 3 gateway(s) seen in the last 10 s');
        const atMs = Date.parse(/ at (\S+Z) by /.exec(r.stdout)?.[1] ?? '');
        // each gateway's own log line says when it applied it (same machine clock as the store)
        const applied = await Promise.all(
          fleet.map((s) =>
            s.waitFor((l) => l.msg === 'revocation applied' && l.lead_sha256 === leadHash(lead), 5_000),
          ),
        );
        const ms = applied.map((l) => Date.parse(String(l.time)) - atMs);
        spans.push(Math.max(...ms));
      }
      // every gateway refuses every revoked lead's old tokens; a pool's workers answer in turn
      for (const s of fleet) {
        for (let i = 0; i < 4; i++) {
          const answer = await orders(s.apiPort, storefront(`fleet-lead-${i % ROUNDS}`));
          expect(answer.json().code).toBe('revoked_lead_token');
        }
        expect((await orders(s.apiPort, storefront('fleet-lead-untouched'))).status).toBe(200);
      }
      // the contract's bound is 1 s; asserted with slack for a shared machine, the figure is reported
      expect(Math.max(...spans)).toBeLessThan(3_000);
      const figure = `revocation propagation to 3 gateways over ${ROUNDS} revocations: median ${median(spans)} ms, worst ${Math.max(...spans)} ms (store write → each gateway's "revocation applied" line; the slowest of the three per revocation)`;
      process.stdout.write(`${figure}\n`);

      const metrics = (await ask(fleet[2]?.adminPort ?? 0, { path: '/metrics' })).text;
      // the pool's primary holds the pod's one set: counted once, not once per worker
      expect(metrics).toContain(`leadgate_revocations{kind="lead"} ${ROUNDS}`);
    }, 120_000);

    it('a revoked key is refused by every gateway and every worker, and accepted again after unrevoke', async () => {
      const server = { 'x-apikey': KEYS.server.key, 'x-source': 'web' };
      expect((await runCliAsync(['revoke', '--key', 'server', '--config', configPath])).code).toBe(0);
      for (const s of fleet) {
        for (let i = 0; i < 4; i++)
          expect((await orders(s.apiPort, server)).json().code).toBe('revoked_api_key');
      }
      const lifted = await runCliAsync(['unrevoke', '--key', 'server', '--config', configPath]);
      expect(lifted.stdout).toContain('applied on 3 of 3');
      for (const s of fleet) {
        for (let i = 0; i < 4; i++) expect((await orders(s.apiPort, server)).status).toBe(200);
      }
    });
  },
);
