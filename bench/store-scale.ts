import { Agent } from 'node:http';
import { openRedisLink } from '../src/store/connect.js';
import { createRedisStore } from '../src/store/redis.js';
import type { RedisSettings } from '../src/store/settings.js';
import { ask, scrape } from '../test/helpers/client.js';
import { startCluster } from '../test/helpers/cluster.js';
import { digestLookup, keysYaml, writeConfig } from '../test/helpers/fixture.js';
import { sleep } from '../test/helpers/fleet.js';
import { serve } from '../test/helpers/process.js';
import { startRedis } from '../test/helpers/redis.js';
import { startRecordingUpstream } from '../test/helpers/upstream.js';

/**
 * `npm run bench:store` (issue 50): the shared store at scale, one Redis against a 3-master
 * Redis Cluster (six nodes, one replica each), on this machine:
 * - the store alone: single-use claims per second from one process through the store leadgate
 *   uses (256 calls in flight: the process, not Redis, is the limit on a small machine), the
 *   round trip of one call, and claims per CPU second of the masters' redis-server (INFO cpu):
 *   what one master core answers at most;
 * - through a gateway: digest lookups per second (single use and one rate-limit policy on, so
 *   two store calls per request) and the store's round trip per request from /metrics.
 * The store becomes the limit once the fleet's lookups × the calls per lookup approach the
 * claims per master CPU second × the masters.
 * BENCH_SECONDS (default 5) per run.
 */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CUSTOMERS = 20_000;
const IN_FLIGHT = 256;
const CONNECTIONS = 32;

const upstream = await startRecordingUpstream();
const redis = await startRedis();
const cluster = await startCluster();

/** CPU seconds redis-server spent (user + sys) on these ports, from INFO cpu. */
async function redisCpu(ports: readonly number[]): Promise<number> {
  let total = 0;
  for (const port of ports)
    for (const m of (await cluster.cli(port, 'info', 'cpu')).matchAll(/^used_cpu_(?:sys|user):([0-9.]+)/gm))
      total += Number(m[1]);
  return total;
}

/** `workers` loops calling `one` until `seconds` are up: the calls made. */
async function loops(workers: number, seconds: number, one: () => Promise<void>): Promise<number> {
  const until = Date.now() + seconds * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      for (; Date.now() < until; done++) await one();
    }),
  );
  return done;
}

async function storeAlone(settings: RedisSettings, masters: readonly number[]) {
  const link = openRedisLink(settings, () => {});
  const store = createRedisStore({ link, keyPrefix: 'bench:', epoch: { began: () => {} } });
  await store.ready;
  const cpuBefore = await redisCpu(masters);
  let totalUs = 0;
  let n = 0;
  const stamp = Math.floor(Date.now() / 1000) + 1;
  const done = await loops(IN_FLIGHT, SECONDS, async () => {
    const started = performance.now();
    await store.claimOnce(`digest:bench:${(n++).toString(16).padStart(64, '0')}`, 600_000, stamp);
    totalUs += (performance.now() - started) * 1000;
  });
  const cpu = (await redisCpu(masters)) - cpuBefore;
  await store.close();
  return {
    claimsPerSecond: Math.round(done / SECONDS),
    meanUs: Math.round(totalUs / done),
    // What one core of redis-server answers at most: where the store becomes the limit.
    claimsPerMasterCpuSecond: Math.round(done / cpu),
  };
}

/** The store's round trips so far, from /metrics: their count and their summed seconds. */
async function storeMetrics(port: number) {
  let sum = 0;
  let count = 0;
  for (const [series, value] of await scrape(port)) {
    const m = /^leadgate_state_store_duration_seconds_(sum|count)\{/.exec(series);
    if (m?.[1] === 'sum') sum += value;
    else if (m?.[1] === 'count') count += value;
  }
  return { sum, count };
}

async function throughGateway(stateYaml: string, masters: readonly number[]) {
  const leads = `leads:\n${Array.from({ length: CUSTOMERS }, (_, i) => `  - { _id: "lead-${i}", customer_id: "c${i}" }`).join('\n')}\n`;
  const file = writeConfig({
    upstream: upstream.url,
    leads,
    keys: keysYaml(),
    extra: `${stateYaml}
digest: { single_use: true }
rate_limits:
  policies:
    - { name: per-key, by: key, limit: 100000000, window_s: 60, keys: [storefront] }`,
  });
  const gw = await serve(file);
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const statuses = new Map<number, number>();
  let i = 0;
  const run = (seconds: number) =>
    loops(CONNECTIONS, seconds, async () => {
      const r = await ask(gw.apiPort, { ...digestLookup(`c${i++ % CUSTOMERS}`), agent });
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
    });
  // Stamps after the second the store's markers were adopted in, then a warm-up, then measure.
  await sleep(1_100);
  await run(1);
  statuses.clear();
  const before = await storeMetrics(gw.adminPort);
  const cpuBefore = await redisCpu(masters);
  const done = await run(SECONDS);
  const cpu = (await redisCpu(masters)) - cpuBefore;
  const after = await storeMetrics(gw.adminPort);
  agent.destroy();
  await gw.stop();
  const calls = after.count - before.count;
  return {
    lookupsPerSecond: Math.round(done / SECONDS),
    storeCallsPerRequest: Number((calls / done).toFixed(2)),
    storeRoundTripUs: Math.round(((after.sum - before.sum) / calls) * 1e6),
    storeMsPerRequest: Number((((after.sum - before.sum) / done) * 1000).toFixed(3)),
    redisCpuUsPerRequest: Math.round((cpu / done) * 1e6),
    statuses: Object.fromEntries(statuses),
  };
}

try {
  const settings = (target: RedisSettings['target']): RedisSettings => ({
    target,
    password: undefined,
    timeoutMs: 1_000,
    keyPrefix: 'bench:',
  });
  const node = cluster.nodes[0];
  const masters = (await cluster.masters()).map((m) => m.port);
  const rows = {
    'one Redis: store alone': await storeAlone(settings({ kind: 'url', url: redis.url }), [redis.port]),
    '3-master cluster: store alone': await storeAlone(
      settings({ kind: 'cluster', nodes: [{ host: '127.0.0.1', port: node?.port ?? 0 }], tls: false }),
      masters,
    ),
    'one Redis: through a gateway': await throughGateway(
      `state: { redis: { url: "${redis.url}", timeout_ms: 1000 } }`,
      [redis.port],
    ),
    '3-master cluster: through a gateway': await throughGateway(
      `state: { redis: { cluster: { nodes: ["${node?.address}"] }, timeout_ms: 1000 } }`,
      masters,
    ),
  };
  process.stdout.write(
    `store scale, ${SECONDS} s per run (redis-server: ${cluster.nodes.length} cluster nodes + 1 alone)\n`,
  );
  for (const [name, row] of Object.entries(rows)) process.stdout.write(`  ${name}: ${JSON.stringify(row)}\n`);
} finally {
  await cluster.stop();
  await redis.stop();
  await upstream.close();
}
