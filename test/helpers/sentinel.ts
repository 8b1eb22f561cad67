import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './optional.js';
import { REDIS_SERVER } from './redis.js';

export const MASTER_NAME = 'mymaster';

/** A master, its replica and three sentinels, each a real redis-server on 127.0.0.1. */
export interface TestSentinel {
  /** `state.redis.sentinel.nodes` for these sentinels. */
  readonly nodes: readonly string[];
  /** Ports of the master and the replica at start. */
  readonly masterPort: number;
  readonly replicaPort: number;
  /** SIGKILL to the master: the sentinels promote the replica. */
  killMaster(): Promise<void>;
  stop(): Promise<void>;
}

const exited = (c: ChildProcess) =>
  new Promise<void>((resolve) =>
    c.exitCode !== null || c.signalCode !== null ? resolve() : c.once('exit', () => resolve()),
  );

/**
 * Short timings so a failover takes a few seconds: a master is down for the sentinels after
 * 1 s without an answer (quorum 2 of 3), a failover is retried after 3 s.
 */
export async function startSentinel(): Promise<TestSentinel> {
  const dir = mkdtempSync(join(tmpdir(), 'leadgate-sentinel-'));
  const masterPort = await freePort();
  const replicaPort = await freePort();
  const data = ['--save', '', '--appendonly', 'no', '--bind', '127.0.0.1', '--dir', dir];
  const master = await launch(['--port', String(masterPort), ...data], 'Ready to accept connections');
  const replica = await launch(
    ['--port', String(replicaPort), ...data, '--replicaof', '127.0.0.1', String(masterPort)],
    'MASTER <-> REPLICA sync: Finished with success',
  );
  const sentinels: ChildProcess[] = [];
  const nodes: string[] = [];
  for (let i = 0; i < 3; i++) {
    const port = await freePort();
    const file = join(dir, `sentinel-${i}.conf`);
    writeFileSync(
      file,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${masterPort} 2`,
        `sentinel down-after-milliseconds ${MASTER_NAME} 1000`,
        `sentinel failover-timeout ${MASTER_NAME} 3000`,
        `sentinel parallel-syncs ${MASTER_NAME} 1`,
        '',
      ].join('\n'),
    );
    sentinels.push(await launch([file, '--sentinel'], 'Sentinel ID is'));
    nodes.push(`127.0.0.1:${port}`);
  }
  const all = [master, replica, ...sentinels];
  return {
    nodes,
    masterPort,
    replicaPort,
    async killMaster() {
      master.kill('SIGKILL');
      await exited(master);
    },
    async stop() {
      for (const c of all) c.kill('SIGKILL');
      await Promise.all(all.map(exited));
    },
  };
}

function launch(args: string[], readyWhen: string): Promise<ChildProcess> {
  const child = spawn(REDIS_SERVER, args, { stdio: ['ignore', 'pipe', 'ignore'] });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`redis-server ${args.join(' ')} did not start: ${out}`));
    }, 15_000);
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes(readyWhen)) {
        clearTimeout(timer);
        child.stdout?.resume();
        resolve(child);
      }
    });
    child.once('exit', () => reject(new Error(`redis-server exited: ${out}`)));
  });
}
