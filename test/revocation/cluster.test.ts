import jwt from 'jsonwebtoken';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leadHash } from '../../src/revocation/index.js';
import { ask } from '../helpers/client.js';
import { hasRedisCluster, startCluster, type TestCluster } from '../helpers/cluster.js';
import { collect } from '../helpers/collect.js';
import { blocksRunBy } from '../helpers/doc-blocks.js';
import { ROOT } from '../helpers/example.js';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { requires } from '../helpers/optional.js';
import { runCliAsync, type Served, serve } from '../helpers/process.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

/**
 * CONTRACT §12's last bullet with real processes: six `redis-server --cluster-enabled yes` made
 * a cluster by `redis-cli --cluster create`, three gateways as processes, `leadgate revoke` and
 * `unrevoke` as processes. The `{revocations}` slot is then migrated to another master by hand
 * (`CLUSTER SETSLOT … MIGRATING/IMPORTING`, `MIGRATE`, `SETSLOT … NODE`: revocations are made
 * while it is half-way, so calls follow `ASK`, and after, so they follow `MOVED`), and the master
 * holding it is SIGKILLed. One cluster for the whole file.
 */

const GUIDE = 'docs/guides/revocation.md';
const ROUNDS = 10;
const PREFIX = 'leadgate:';
/** One key of the set: all of them share its slot. */
const VERSION = `${PREFIX}{revocations}:version`;
const nowS = () => Math.floor(Date.now() / 1000);
/** Tokens issued before every revocation of this file. */
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
const unconfirmed = (gw: Served) =>
  gw.lines.filter(
    (l) => l.msg === 'revocation set not confirmed with the state store: applying the set last loaded',
  );
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
};

describe.runIf(requires('redis-cli', hasRedisCluster, 'Debian: apt-get install redis-server redis-tools'))(
  'revocation on Redis Cluster: three gateways, the set moved to another master, then its master killed',
  () => {
    let cluster: TestCluster;
    let upstream: RecordingUpstream;
    let configPath: string;
    const fleet: Served[] = [];
    const cli = (...args: string[]) => runCliAsync([...args, '--config', configPath]);

    /**
     * `leadgate revoke --lead LEAD` as a process; the time from the store's write to the slowest
     * gateway's `revocation applied` line for it.
     */
    const revokeLead = async (lead: string, waitMs = 5_000): Promise<{ ms: number; stdout: string }> => {
      const r = await cli('revoke', '--lead', lead, '--by', 'ci');
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const atMs = Date.parse(/ at (\S+Z) by /.exec(r.stdout)?.[1] ?? '');
      expect(Number.isFinite(atMs)).toBe(true);
      const applied = await Promise.all(
        fleet.map((s) =>
          s.waitFor((l) => l.msg === 'revocation applied' && l.lead_sha256 === leadHash(lead), waitMs),
        ),
      );
      return { ms: Math.max(...applied.map((l) => Date.parse(String(l.time)) - atMs)), stdout: r.stdout };
    };
    const slot = async () =>
      Number(
        (
          await cluster.cli(cluster.nodes.find((n) => n.alive)?.port ?? 0, 'cluster', 'keyslot', VERSION)
        ).trim(),
      );

    beforeAll(async () => {
      cluster = await startCluster();
      upstream = await startRecordingUpstream();
      const nodes = cluster.nodes.map((n) => `"${n.address}"`).join(', ');
      configPath = writeConfig({
        upstream: upstream.url,
        extra: `state: { redis: { cluster: { nodes: [${nodes}] }, key_prefix: "${PREFIX}" } }`,
      });
      const env = { LEADGATE_WATCH: '0' };
      fleet.push(await serve(configPath, env), await serve(configPath, env), await serve(configPath, env));
      await Promise.all(fleet.map((s) => s.waitFor((l) => l.msg === 'revocation set loaded', 15_000)));
    }, 90_000);
    afterAll(async () => {
      await Promise.all(fleet.map((s) => s.stop()));
      await upstream?.close();
      await cluster?.stop();
    });

    it(`applies each of ${ROUNDS} changes on every gateway (median and worst reported); a key revoked, listed, lifted`, async () => {
      const spans: number[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        const { ms, stdout } = await revokeLead(`cluster-lead-${i}`);
        expect(stdout).toContain('applied on 3 of 3 gateway(s) seen in the last 10 s');
        spans.push(ms);
      }
      const key = await cli('revoke', '--key', 'server', '--reason', 'leaked');
      expect(key.code).toBe(0);
      expect(key.stdout).toContain('applied on 3 of 3');
      for (const s of fleet) {
        expect(await code(s.apiPort, server)).toBe('revoked_api_key');
        expect(await code(s.apiPort, storefront('cluster-lead-3'))).toBe('revoked_lead_token');
        expect(await code(s.apiPort, storefront('cluster-lead-untouched'))).toBe('ok');
      }
      const list = await cli('revoke', '--list');
      expect(list.code).toBe(0);
      expect(list.stdout).toMatch(/\nkey +server .* leaked\n/);
      expect(list.stdout.match(/\nlead +cluster-lead-\d+ /g)).toHaveLength(ROUNDS);
      const lifted = await cli('unrevoke', '--key', 'server');
      expect(lifted.code).toBe(0);
      expect(lifted.stdout).toContain('applied on 3 of 3');
      for (const s of fleet) expect(await code(s.apiPort, server)).toBe('ok');
      // the contract's bound is 1 s; asserted with slack for a shared machine, the figure reported
      expect(Math.max(...spans)).toBeLessThan(3_000);
      process.stdout.write(
        `revocation on a cluster, 3 gateways, ${ROUNDS} revocations: median ${median(spans)} ms, worst ${Math.max(...spans)} ms (store write → the slowest gateway's "revocation applied" line)\n`,
      );
    }, 120_000);

    it(`${GUIDE}: the block that finds where the set is, as written, against this cluster`, async () => {
      const blocks = blocksRunBy(GUIDE, 'test/revocation/cluster.test.ts');
      expect(blocks.length).toBe(1);
      const script = blocks[0]?.text ?? '';
      // the one change: this cluster's node, not redis-0.redis:6379
      expect(script).toContain('-h redis-0.redis -p 6379');
      const port = cluster.nodes[0]?.port ?? 0;
      const r = await collect(
        'bash',
        [
          '-e',
          '-o',
          'pipefail',
          '-c',
          script.replaceAll('-h redis-0.redis -p 6379', `-h 127.0.0.1 -p ${port}`),
        ],
        {
          cwd: ROOT,
          env: { PATH: process.env.PATH, HOME: process.env.HOME },
          timeoutMs: 30_000,
        },
      );
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const [keyslot, ...rest] = r.stdout.trim().split('\n');
      expect(keyslot).toBe('10721');
      expect(await slot()).toBe(10721);
      expect(rest.filter((l) => l.split(' ')[2]?.includes('master'))).toHaveLength(3);
      // the version the last unrevoke wrote: `<store ms>.<serial>`
      expect(rest.at(-1)).toMatch(/^\d{13}\.\d+$/);
    });

    it('the {revocations} slot migrated to another master: revocations made half-way (ASK) and after (MOVED) reach every gateway', async () => {
      const s = await slot();
      const from = await cluster.masterOf(VERSION);
      const masters = await cluster.masters();
      const source = masters.find((m) => m.port === from);
      const target = masters.find((m) => m.port !== from);
      if (source === undefined || target === undefined) throw new Error('three masters expected');
      const keysBefore = (await cluster.cli(from, 'cluster', 'getkeysinslot', String(s), '100'))
        .trim()
        .split('\n');
      expect(keysBefore).toContain(`${PREFIX}{revocations}:entries`);

      // the target has never run a revocation script: its first call there is answered NOSCRIPT
      await cluster.cli(target.port, 'script', 'flush');
      const failuresBefore = fleet.map((gw) => unconfirmed(gw).length);
      await cluster.cli(target.port, 'cluster', 'setslot', String(s), 'importing', source.id);
      await cluster.cli(from, 'cluster', 'setslot', String(s), 'migrating', target.id);
      // migrating, the keys still on the source: served there
      const migrating = await revokeLead('cluster-migrating');
      await cluster.cli(
        from,
        'migrate',
        '127.0.0.1',
        String(target.port),
        '',
        '0',
        '5000',
        'keys',
        ...keysBefore,
      );
      expect((await cluster.cli(from, 'cluster', 'countkeysinslot', String(s))).trim()).toBe('0');
      // the keys on the target, the slot still the source's: every call is answered ASK
      const asked = await revokeLead('cluster-asked');
      for (const port of cluster.nodes.filter((n) => n.alive).map((n) => n.port))
        await cluster.cli(port, 'cluster', 'setslot', String(s), 'node', target.id);
      expect(await cluster.masterOf(VERSION)).toBe(target.port);
      // the slot moved: a gateway's first call there is answered MOVED
      const moved = await revokeLead('cluster-moved');
      for (const gw of fleet) {
        for (const lead of ['cluster-lead-0', 'cluster-migrating', 'cluster-asked', 'cluster-moved'])
          expect(await code(gw.apiPort, storefront(lead))).toBe('revoked_lead_token');
      }
      // ASK and MOVED followed within a call: no gateway missed a sync meanwhile
      expect(fleet.map((gw) => unconfirmed(gw).length)).toEqual(failuresBefore);
      const lifted = await cli('unrevoke', '--lead', 'cluster-lead-0');
      expect(lifted.code).toBe(0);
      expect(lifted.stdout).toContain('applied on 3 of 3');
      for (const gw of fleet) expect(await code(gw.apiPort, storefront('cluster-lead-0'))).toBe('ok');
      process.stdout.write(
        `revocation on a cluster, slot ${s} migrated ${from} → ${target.port}: migrating ${migrating.ms} ms, ASK ${asked.ms} ms, MOVED ${moved.ms} ms\n`,
      );
    }, 60_000);

    it('the master holding the set SIGKILLed: gateways keep the set, a revocation made at once is stored on the promoted replica and applied everywhere', async () => {
      const holder = await cluster.masterOf(VERSION);
      const id = (await cluster.masters()).find((m) => m.port === holder)?.id ?? '';
      expect((await cluster.replicasOf(id)).length).toBe(1);
      // the replica has every write so far (else a failover loses the newest: see the guide)
      expect(Number((await cluster.cli(holder, 'wait', '1', '2000')).trim())).toBe(1);
      const killedAt = Date.now();
      await cluster.kill(holder);
      // made at once: the command waits for the promoted replica
      let settled = false;
      const revoking = revokeLead('cluster-failover', 15_000).finally(() => {
        settled = true;
      });
      // meanwhile, while no master serves the set, the gateways keep applying the set they had
      let checks = 0;
      while (!settled) {
        for (const gw of fleet) {
          expect(await code(gw.apiPort, storefront('cluster-moved'))).toBe('revoked_lead_token');
          expect(await code(gw.apiPort, storefront('cluster-lead-untouched'))).toBe('ok');
        }
        checks++;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(checks).toBeGreaterThan(1);
      const during = await revoking;
      const storedAfterMs = Date.now() - killedAt;
      await cluster.waitHealthy();
      expect(await cluster.masterOf(VERSION)).not.toBe(holder);
      // a gateway that missed syncs while no master held the slot says so, then that it is back
      for (const gw of fleet) {
        const missed = unconfirmed(gw).filter((l) => Date.parse(String(l.time)) >= killedAt);
        if (missed.length > 0)
          await gw.waitFor(
            (l) =>
              l.msg === 'revocation set confirmed with the state store again' &&
              Date.parse(String(l.time)) >= killedAt,
            10_000,
          );
      }
      const noticed = fleet.filter((gw) =>
        unconfirmed(gw).some((l) => Date.parse(String(l.time)) >= killedAt),
      ).length;
      const after = await revokeLead('cluster-after-failover');
      expect(after.stdout).toContain('applied on 3 of 3');
      for (const gw of fleet) {
        for (const lead of ['cluster-lead-1', 'cluster-moved', 'cluster-failover', 'cluster-after-failover'])
          expect(await code(gw.apiPort, storefront(lead))).toBe('revoked_lead_token');
        expect(await code(gw.apiPort, storefront('cluster-lead-0'))).toBe('ok');
      }
      process.stdout.write(
        `revocation on a cluster, the set's master SIGKILLed: a revoke started at once stored and applied by 3 gateways ${storedAfterMs} ms after the kill (store write → slowest gateway ${during.ms} ms); after the failover ${after.ms} ms; ${noticed} of 3 gateways logged a missed sync meanwhile\n`,
      );
    }, 90_000);
  },
);
