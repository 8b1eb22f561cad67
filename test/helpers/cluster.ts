import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, runs } from './optional.js';
import { REDIS_SERVER } from './redis.js';

export const REDIS_CLI = '/usr/bin/redis-cli';
export const hasRedisCluster = runs(REDIS_SERVER, ['--version']) && runs(REDIS_CLI, ['--version']);

const run = promisify(execFile);

/** One `redis-server --cluster-enabled yes` of a test cluster. */
export interface ClusterNode {
  readonly port: number;
  /** `host:port`, as `state.redis.cluster.nodes` lists it. */
  readonly address: string;
  readonly alive: boolean;
}

/** Six real redis-servers on 127.0.0.1, three masters with one replica each, no persistence. */
export interface TestCluster {
  readonly nodes: readonly ClusterNode[];
  /** `redis-cli` against one node (`-p` set); its stdout. */
  cli(port: number, ...args: string[]): Promise<string>;
  /** The ports of the nodes serving as masters now, each with its slot ranges. */
  masters(): Promise<{ port: number; id: string; slots: string }[]>;
  /** The ports of the replicas of the master with node id `id`. */
  replicasOf(id: string): Promise<number[]>;
  /** The master port serving `key` now. */
  masterOf(key: string): Promise<number>;
  /** SIGKILL one node. */
  kill(port: number): Promise<void>;
  /** Starts a killed node again on its port, empty, with its old nodes.conf (it rejoins). */
  restart(port: number): Promise<void>;
  /** Until every live node says `cluster_state:ok` and agrees on one master per slot range. */
  waitHealthy(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

const exited = (c: ChildProcess) =>
  new Promise<void>((resolve) =>
    c.exitCode !== null || c.signalCode !== null ? resolve() : c.once('exit', () => resolve()),
  );
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Starts six nodes and creates the cluster with `redis-cli --cluster create --cluster-replicas 1
 * --cluster-yes`. A master is failed for the others after `node_timeout_ms` without an answer.
 * With `create: false` the nodes are started but no cluster is made (call `create()` later).
 */
export async function startCluster(
  options: {
    nodeTimeoutMs?: number;
    create?: boolean;
    /** TLS only (clients, the cluster bus, replication), with this certificate: see testCertificates. */
    tls?: TestCertificates;
    /** Three masters only, no replicas. */
    mastersOnly?: boolean;
  } = {},
): Promise<TestCluster & { create(): Promise<void>; formInSteps(): Promise<() => Promise<void>> }> {
  const dir = mkdtempSync(join(tmpdir(), 'leadgate-cluster-'));
  const nodeTimeout = options.nodeTimeoutMs ?? 1_000;
  const procs = new Map<number, ChildProcess>();
  const bus = new Map<number, number>();
  const ports: number[] = [];
  const count = options.mastersOnly === true ? 3 : 6;
  const tls = options.tls;
  for (let i = 0; i < count; i++) {
    const port = await freePort();
    ports.push(port);
    bus.set(port, await freePort());
  }
  const launch = (port: number) =>
    startNode(
      [
        ...(tls === undefined
          ? ['--port', String(port)]
          : [
              '--port',
              '0',
              '--tls-port',
              String(port),
              '--tls-cluster',
              'yes',
              '--tls-replication',
              'yes',
              '--tls-cert-file',
              tls.cert,
              '--tls-key-file',
              tls.key,
              '--tls-ca-cert-file',
              tls.ca,
              '--tls-auth-clients',
              'no',
            ]),
        '--cluster-port',
        String(bus.get(port)),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        `nodes-${port}.conf`,
        '--cluster-node-timeout',
        String(nodeTimeout),
        '--dir',
        dir,
        '--save',
        '',
        '--appendonly',
        'no',
      ],
      (child) => procs.set(port, child),
    );
  await Promise.all(ports.map(launch));

  const tlsArgs = tls === undefined ? [] : ['--tls', '--cacert', tls.ca];
  const cli = async (port: number, ...args: string[]) =>
    (await run(REDIS_CLI, [...tlsArgs, '-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 120_000 }))
      .stdout;
  const alive = (port: number) => {
    const c = procs.get(port);
    return c !== undefined && c.exitCode === null && c.signalCode === null;
  };
  const masters = async () => {
    const from = ports.find(alive);
    if (from === undefined) throw new Error('no node alive');
    const text = await cli(from, 'cluster', 'nodes');
    return text
      .trim()
      .split('\n')
      .map((line) => line.split(' '))
      .filter((f) => f[2]?.includes('master') && !f[2]?.includes('fail') && f.length > 8)
      .map((f) => ({
        port: Number(f[1]?.split('@')[0]?.split(':')[1]),
        id: f[0] ?? '',
        slots: f.slice(8).join(' '),
      }));
  };
  const waitHealthy = async (timeoutMs = 30_000) => {
    const until = Date.now() + timeoutMs;
    for (;;) {
      let ok = true;
      for (const port of ports.filter(alive)) {
        const info = await cli(port, 'cluster', 'info').catch(() => '');
        if (!info.includes('cluster_state:ok')) ok = false;
      }
      if (ok) {
        // Every slot served by a master that is alive and that no node suspects (`fail?`).
        const m = await masters().catch(() => []);
        const served = m.filter((x) => x.slots !== '');
        if (served.every((x) => alive(x.port)) && slotCount(served.map((x) => x.slots).join(' ')) === 16384)
          return;
      }
      if (Date.now() > until) throw new Error('the test cluster did not become healthy');
      await sleep(200);
    }
  };
  const create = async () => {
    await run(
      REDIS_CLI,
      [
        ...tlsArgs,
        '--cluster',
        'create',
        ...ports.map((p) => `127.0.0.1:${p}`),
        '--cluster-replicas',
        options.mastersOnly === true ? '0' : '1',
        '--cluster-yes',
      ],
      { timeout: 60_000 },
    );
    await waitHealthy();
    // Every replica synced with its master.
    for (const port of ports) {
      for (let i = 0; i < 200; i++) {
        const info = await cli(port, 'info', 'replication');
        if (info.includes('role:master') || info.includes('master_link_status:up')) break;
        await sleep(100);
      }
    }
  };
  /**
   * Forms the cluster by hand as `--cluster create` does, in two steps: now, the first master's
   * third of the slots on it alone (it knows no other node: the map it gives has holes); the step
   * returned assigns the other two thirds, makes the nodes meet and the last three replicas.
   */
  const formInSteps = async () => {
    const [a, b, c] = ports as [number, number, number];
    await cli(a, 'cluster', 'addslotsrange', '0', '5460');
    return async () => {
      await cli(b, 'cluster', 'addslotsrange', '5461', '10922');
      await cli(c, 'cluster', 'addslotsrange', '10923', '16383');
      for (const [i, port] of [a, b, c].entries())
        await cli(port, 'cluster', 'set-config-epoch', String(i + 1));
      for (const port of ports.slice(1))
        await cli(a, 'cluster', 'meet', '127.0.0.1', String(port), String(bus.get(port)));
      await waitHealthy();
      for (const [i, port] of ports.slice(3).entries()) {
        const masterId = (await cli(ports[i] as number, 'cluster', 'myid')).trim();
        for (let k = 0; k < 100; k++) {
          const out = await cli(port, 'cluster', 'replicate', masterId).catch(() => '');
          if (out.includes('OK')) break;
          await sleep(100);
        }
      }
      await waitHealthy();
    };
  };
  const stopAll = async () => {
    const all = [...procs.values()];
    for (const c of all) c.kill('SIGKILL');
    await Promise.all(all.map(exited));
    rmSync(dir, { recursive: true, force: true });
  };
  if (options.create !== false) {
    try {
      await create();
    } catch (err) {
      await stopAll();
      throw err;
    }
  }

  return {
    get nodes() {
      return ports.map((port) => ({ port, address: `127.0.0.1:${port}`, alive: alive(port) }));
    },
    cli,
    masters,
    async replicasOf(id) {
      const text = await cli(ports.find(alive) ?? 0, 'cluster', 'nodes');
      return text
        .trim()
        .split('\n')
        .map((line) => line.split(' '))
        .filter((f) => f[2]?.includes('slave') && f[3] === id)
        .map((f) => Number(f[1]?.split('@')[0]?.split(':')[1]));
    },
    async masterOf(key) {
      const slot = Number((await cli(ports.find(alive) ?? 0, 'cluster', 'keyslot', key)).trim());
      for (const m of await masters()) {
        for (const range of m.slots.split(' ')) {
          const [a, b] = range.split('-').map(Number);
          if (a !== undefined && slot >= a && slot <= (b ?? a)) return m.port;
        }
      }
      throw new Error(`no master serves slot ${slot}`);
    },
    async kill(port) {
      const c = procs.get(port);
      c?.kill('SIGKILL');
      if (c !== undefined) await exited(c);
    },
    async restart(port) {
      await launch(port);
    },
    waitHealthy,
    create,
    formInSteps,
    stop: stopAll,
  };
}

/** How many slots ranges written as CLUSTER NODES does (`0-5460 10923`) hold; `[…]` entries not. */
function slotCount(ranges: string): number {
  let n = 0;
  for (const range of ranges.split(' ')) {
    if (range === '' || range.startsWith('[')) continue;
    const [a, b] = range.split('-').map(Number);
    if (a !== undefined) n += (b ?? a) - a + 1;
  }
  return n;
}

export interface TestCertificates {
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
}

/** A CA of this test's own and a certificate it signed for 127.0.0.1 (openssl), in `dir`. */
export async function testCertificates(dir: string): Promise<TestCertificates> {
  const at = (f: string) => join(dir, f);
  const ssl = (...args: string[]) => run('openssl', args, { timeout: 60_000 });
  await ssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    at('ca.key'),
    '-out',
    at('ca.pem'),
    '-days',
    '2',
    '-subj',
    '/CN=leadgate-test-ca',
  );
  await ssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    at('node.key'),
    '-out',
    at('node.csr'),
    '-subj',
    '/CN=127.0.0.1',
  );
  writeFileSync(at('san.ext'), 'subjectAltName=IP:127.0.0.1\n');
  await ssl(
    'x509',
    '-req',
    '-in',
    at('node.csr'),
    '-CA',
    at('ca.pem'),
    '-CAkey',
    at('ca.key'),
    '-CAcreateserial',
    '-out',
    at('node.pem'),
    '-days',
    '2',
    '-extfile',
    at('san.ext'),
  );
  return { ca: at('ca.pem'), cert: at('node.pem'), key: at('node.key') };
}

function startNode(args: string[], started: (child: ChildProcess) => void): Promise<void> {
  const child = spawn(REDIS_SERVER, args, { stdio: ['ignore', 'pipe', 'ignore'] });
  started(child);
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`redis-server did not start: ${out}`));
    }, 15_000);
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('Ready to accept connections')) {
        clearTimeout(timer);
        child.stdout?.resume();
        out = '';
        resolve();
      }
    });
    child.once('exit', () => {
      clearTimeout(timer);
      reject(new Error(`redis-server exited: ${out}`));
    });
  });
}
