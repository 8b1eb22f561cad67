import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keySlot, linkToCluster } from '../../src/store/cluster.js';
import { script } from '../../src/store/link.js';
import { hasRedisCluster, startCluster, type TestCluster } from '../helpers/cluster.js';
import { writeConfig } from '../helpers/fixture.js';
import { lookup, nowS, sleep } from '../helpers/fleet.js';
import { requires } from '../helpers/optional.js';
import { type Served, serve } from '../helpers/process.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

/**
 * A gateway started while its cluster is still forming (the nodes answer, `redis-cli --cluster
 * create` has not assigned every slot yet) learns a slot map with holes. @redis/client 6.3.1 alone
 * then fails every call to a slot in a hole with a TypeError ("reading 'master'") and never asks
 * again; the link asks for the slot map again on such a call, so the gateway serves once the
 * cluster is made, without a restart.
 */
const CUSTOMERS = 64;
const leads = `leads:\n${Array.from({ length: CUSTOMERS }, (_, i) => `  - { _id: "lead-${i}", customer_id: "cust-${i}" }`).join('\n')}\n`;

describe.runIf(requires('redis-cli', hasRedisCluster, 'Debian: apt-get install redis-server redis-tools'))(
  'Redis Cluster: a gateway that connected while the cluster was forming',
  () => {
    let upstream: RecordingUpstream;
    let cluster: TestCluster & { formInSteps(): Promise<() => Promise<void>> };
    let gw: Served;
    beforeAll(async () => {
      upstream = await startRecordingUpstream();
      cluster = await startCluster({ create: false });
    }, 60_000);
    afterAll(async () => {
      await gw?.stop();
      await cluster?.stop();
      await upstream?.close();
    });

    it('serves every slot once the cluster is made, without a restart', async () => {
      const file = writeConfig({
        upstream: upstream.url,
        leads,
        extra: `state:
  redis:
    cluster: { nodes: ["${cluster.nodes[0]?.address}"] }
    key_prefix: "forming:"
digest: { single_use: true }`,
      });
      // The gateway, and a link of its own, connect when one master has its slots and knows no
      // other node yet.
      const rest = await cluster.formInSteps();
      const [host, port] = (cluster.nodes[0]?.address ?? '').split(':');
      const link = linkToCluster(
        { nodes: [{ host: host ?? '', port: Number(port) }], tls: false },
        { password: undefined, connectTimeoutMs: 1_000, onError: () => {} },
      );
      await link.ready;
      gw = await serve(file);
      await gw
        .waitFor((l) => l.msg === 'redis connection error' || String(l.msg).includes('state store'), 5_000)
        .catch(() => null);
      await sleep(1_000);
      await rest();
      const startedAt = Date.now();
      // One key in each third of the slots: the link learnt only the first third at its start.
      const keys = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
      expect(new Set(keys.map((k) => Math.floor(keySlot(k) / 5462))).size).toBe(3);
      const set = script("return redis.call('SET', KEYS[1], '1')");
      const failing = new Set(keys);
      const errors = new Set<string>();
      for (let round = 0; round < 40 && failing.size > 0; round++) {
        for (const k of [...failing]) {
          await link.run(set, [k], []).then(
            () => failing.delete(k),
            (err: unknown) => errors.add(err instanceof Error ? err.message : String(err)),
          );
        }
        if (failing.size > 0) await sleep(250);
      }
      link.close();
      process.stderr.write(
        `[cluster forming] the link reached every slot ${((Date.now() - startedAt) / 1000).toFixed(1)} s after the cluster was made; errors meanwhile: ${[...errors].join('; ')}\n`,
      );
      expect([...failing]).toEqual([]);
      // Every customer's claim (32 tags over the whole slot range) must be admitted.
      const pending = new Set(Array.from({ length: CUSTOMERS }, (_, i) => i));
      const seen = new Set<string>();
      for (let round = 0; round < 60 && pending.size > 0; round++) {
        const ts = nowS();
        for (const c of [...pending]) {
          const answer = await lookup(gw.apiPort, c, ts);
          seen.add(answer);
          if (answer === '200') pending.delete(c);
        }
        if (pending.size > 0) await sleep(500);
      }
      process.stderr.write(
        `[cluster forming] all ${CUSTOMERS} customers admitted ${((Date.now() - startedAt) / 1000).toFixed(1)} s after the cluster was made; answers seen: ${[...seen].join(', ')}\n`,
      );
      expect([...pending]).toEqual([]);
      for (const answer of seen)
        expect(['200', '503 store_unavailable', '401 stale_timestamp']).toContain(answer);
    }, 90_000);
  },
);
