import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasRedisCluster, startCluster, type TestCluster, testCertificates } from '../helpers/cluster.js';
import { writeConfig } from '../helpers/fixture.js';
import { lookup, nowS, sleep } from '../helpers/fleet.js';
import { requires, runs } from '../helpers/optional.js';
import { type Served, serve } from '../helpers/process.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

/**
 * `state.redis.cluster.tls` (a managed service's in-transit encryption): a cluster that serves
 * TLS only, on every node and its bus, with a CA of the test's own that the gateway is told of by
 * NODE_EXTRA_CA_CERTS, as a user would. Without the CA the store is unavailable (503), never
 * unchecked.
 */
const CUSTOMERS = 40;
const leads = `leads:\n${Array.from({ length: CUSTOMERS }, (_, i) => `  - { _id: "lead-${i}", customer_id: "cust-${i}" }`).join('\n')}\n`;
const hasOpenssl = runs('openssl', ['version']);

describe.runIf(
  requires('redis-cli', hasRedisCluster, 'Debian: apt-get install redis-server redis-tools') &&
    requires('openssl', hasOpenssl, 'Debian: apt-get install openssl'),
)('Redis Cluster over TLS', () => {
  let upstream: RecordingUpstream;
  let cluster: TestCluster;
  let ca = '';
  const started: Served[] = [];
  beforeAll(async () => {
    upstream = await startRecordingUpstream();
    const certs = await testCertificates(mkdtempSync(join(tmpdir(), 'leadgate-cluster-tls-')));
    ca = certs.ca;
    cluster = await startCluster({ tls: certs, mastersOnly: true });
  }, 90_000);
  afterAll(async () => {
    await Promise.all(started.map((g) => g.stop()));
    await cluster?.stop();
    await upstream?.close();
  });

  const config = () =>
    writeConfig({
      upstream: upstream.url,
      leads,
      extra: `state:
  redis:
    cluster: { nodes: ["${cluster.nodes[0]?.address}"], tls: true }
    key_prefix: "tls:"
    timeout_ms: 500
digest: { single_use: true, on_store_error: deny }`,
    });

  it('claims over TLS on every master: one use admitted, the replay refused', async () => {
    const gw = await serve(config(), { NODE_EXTRA_CA_CERTS: ca });
    started.push(gw);
    let answers: string[] = [];
    for (let round = 0; round < 40; round++) {
      const ts = nowS();
      answers = [];
      for (let c = 0; c < CUSTOMERS; c++) answers.push(await lookup(gw.apiPort, c, ts));
      if (answers.every((a) => a === '200')) {
        for (let c = 0; c < CUSTOMERS; c++)
          expect(await lookup(gw.apiPort, c, ts)).toBe('401 replayed_digest');
        break;
      }
      await sleep(250);
    }
    expect(answers.every((a) => a === '200')).toBe(true);
    // Claims reached every master (the customers' digests spread over the 32 tags).
    for (const m of await cluster.masters()) {
      expect(Number((await cluster.cli(m.port, 'dbsize')).trim())).toBeGreaterThan(0);
    }
  }, 60_000);

  it('without the CA, the store is unavailable: 503 store_unavailable, never admitted unchecked', async () => {
    const gw = await serve(config());
    started.push(gw);
    await sleep(1_000);
    const answers = new Set<string>();
    for (let c = 0; c < 10; c++) answers.add(await lookup(gw.apiPort, c, nowS()));
    expect([...answers]).toEqual(['503 store_unavailable']);
  }, 60_000);
});
