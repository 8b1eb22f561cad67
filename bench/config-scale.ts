import { spawnSync } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { startGateway } from '../src/gateway.js';
import { createLogger } from '../src/observability/log.js';
import { ask } from '../test/helpers/client.js';
import { serve } from '../test/helpers/process.js';
import { cpuMicros } from './cpu.js';
import { STOREFRONT_KEY, TOKEN, writeBenchConfig } from './fixture.js';
import { runLoad } from './load.js';
import { benchFile, serve as leadgate, startUpstream, stopAll } from './process.js';

/**
 * `npm run bench:config [-- --million]`: issue 10's targets for large key tables, measured, not
 * asserted, on keys of the reviewed soak config's shape (fixture.ts: 100,000 keys are 17 MiB, with
 * `origin_ips` and rotating secrets). 100,000 keys: start to ready of `leadgate serve` (wall clock
 * and CPU), heap while loading (each isolate under a 200 MB cap or not), load time and heap held
 * per key, the longest event-loop pause and the latency of a steady 200 req/s token load during a
 * reload, and token-path throughput with 10, 10,000 and 100,000 keys and 1,000 `origin_ips`.
 */
const LOAD = benchFile('./config-load.js');
const WORKER = new URL('../src/config/load-worker.js', import.meta.url);
const HEADERS = { 'x-apikey': STOREFRONT_KEY, 'x-source': 'web', 'x-leadtoken': TOKEN };
const ADDED_KEY =
  '  - { name: added, key: "sk_added_key_00000000", access_type: WRITE, signing_secret: "added-secret-0000000000000000000000" }\n';

const step = (what: string) => process.stderr.write(`config-scale: ${what}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main() {
  step('starting the bench upstream');
  const upstream = await startUpstream();
  const soak = (keys: number) =>
    writeBenchConfig({ upstreamPort: upstream.port, engine: 'undici', extraKeys: keys, keyShape: 'soak' });
  const out: Record<string, unknown> = {};
  const sizes = process.argv.includes('--million') ? [20_000, 100_000, 1_000_000] : [20_000, 100_000];
  for (const keys of sizes) {
    step(`${keys} keys: serve, ready, reload`);
    Object.assign(out, await serveAndReload(soak(keys), keys));
    step(`${keys} keys: load time and heap held per key`);
    const held = loadAlone(keys, 4096);
    out[`load_ms_${keys}`] = held?.load_ms;
    out[`held_bytes_per_key_${keys}`] = held?.heap_bytes_per_key;
  }
  const path = soak(100_000);
  step('100000 keys under a 200 MB heap cap');
  out.main_isolate_fits_200mb = loadAlone(100_000, 200) !== null;
  step('the loader thread under a 200 MB heap cap');
  out.loader_thread_fits_200mb = await workerFits(path, 200);
  step('reload under a steady 200 req/s');
  Object.assign(out, await reloadUnderLoad(path));
  step('throughput, 10 to 100000 keys');
  Object.assign(out, await throughput(upstream.port));
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
}

/**
 * `leadgate serve` from spawn to its ready line, and the CPU it used by then (user + system, all
 * its threads: on a shared machine, steadier than the wall clock); its peak RSS then, and again
 * after a reload by SIGHUP (two configs alive at once, plus the loader thread): what a memory
 * limit must hold.
 */
async function serveAndReload(path: string, keys: number): Promise<Record<string, number>> {
  const t0 = performance.now();
  const gw = await serve(path, { LEADGATE_WATCH: '0' }, 600_000);
  const pid = gw.child.pid ?? 0;
  const peakMb = () => {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return Math.round(Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024);
  };
  const out: Record<string, number> = {
    [`ready_ms_${keys}`]: Math.round(performance.now() - t0),
    [`ready_cpu_ms_${keys}`]: cpuMicros(pid) / 1000,
    [`ready_peak_rss_mb_${keys}`]: peakMb(),
  };
  appendFileSync(path, ADDED_KEY);
  gw.child.kill('SIGHUP');
  const line = await gw.waitFor((l) => /^config reload(ed| refused)/.test(String(l.msg)), 600_000);
  out[`reload_ok_${keys}`] = line.msg === 'config reloaded' ? 1 : 0;
  out[`reload_peak_rss_mb_${keys}`] = peakMb();
  await gw.stop();
  return out;
}

/**
 * config-load.js on `keys` keys in a process whose old space is capped at `mb`: its load time and
 * the heap it holds per key, or null when the load does not fit.
 */
function loadAlone(keys: number, mb: number): Record<string, number> | null {
  const argv = ['--expose-gc', `--max-old-space-size=${mb}`, LOAD, String(keys)];
  const r = spawnSync(process.execPath, argv, { encoding: 'utf8' });
  return r.status === 0 ? (JSON.parse(r.stdout) as Record<string, number>) : null;
}

/** Does the reload's own thread (the real load-worker script) load it under an `mb` cap? */
function workerFits(path: string, mb: number): Promise<boolean> {
  return new Promise((resolve) => {
    const worker = new Worker(WORKER, {
      workerData: { path, env: {}, previousFiles: [], known: [], batch: 2000 },
      resourceLimits: { maxOldGenerationSizeMb: mb },
    });
    worker.on('message', (m: { type: string }) => {
      if (m.type === 'end' || m.type === 'failed') {
        void worker.terminate();
        resolve(m.type === 'end');
      } else worker.postMessage('next'); // batches are pulled, as the reloader does
    });
    worker.on('error', () => resolve(false));
  });
}

/** A steady 200 req/s token load through a gateway with 100,000 keys while its config reloads. */
async function reloadUnderLoad(path: string) {
  const gw = await startGateway({ configPath: path, logger: createLogger({ level: 'error' }), watch: false });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  const latencies: number[] = [];
  let errors = 0;
  const one = async () => {
    const t0 = performance.now();
    const status = await ask(gw.apiPort, { path: '/api/v2/merchant/orders', headers: HEADERS, agent }).then(
      (r) => r.status,
      () => 0,
    );
    if (status !== 200) errors++;
    if (status !== 0) latencies.push(performance.now() - t0);
  };
  const pacer = setInterval(() => void one(), 5);
  await sleep(1000);
  latencies.length = 0;
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  appendFileSync(path, ADDED_KEY);
  const t0 = performance.now();
  const result = await gw.reload('bench');
  const reloadMs = Math.round(performance.now() - t0);
  await sleep(500);
  delay.disable();
  clearInterval(pacer);
  await sleep(200);
  await gw.close();
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return {
    reload_result: result,
    reload_ms: reloadMs,
    reload_max_event_loop_pause_ms: Math.round(delay.max / 1e6),
    reload_p99_latency_ms: Math.round((latencies[Math.floor(latencies.length * 0.99)] ?? 0) * 10) / 10,
    reload_requests: latencies.length,
    reload_errors: errors,
  };
}

/**
 * Token-path req/s with 10, 10,000 and 100,000 keys and with 1,000 `origin_ips` on the key, one
 * after the other, same load; each gateway its own `leadgate serve` process.
 */
async function throughput(upstreamPort: number) {
  const rps: Record<string, number> = {};
  const runs = [
    ['10_keys', { extraKeys: 8 }],
    ['10000_keys', { extraKeys: 9_998 }],
    ['100000_keys', { extraKeys: 99_998 }],
    ['1000_origin_ips', { originIps: 1000 }],
  ] as const;
  for (const [name, keys] of runs) {
    const path = writeBenchConfig({ upstreamPort, engine: 'undici', ...keys });
    const gw = await leadgate(path, { env: { LEADGATE_WATCH: '0' } });
    const url = `http://127.0.0.1:${gw.port}/api/v2/merchant/orders`;
    await runLoad({ url, headers: HEADERS, connections: 50, seconds: 2 });
    rps[`rps_${name}`] = Math.round(
      (await runLoad({ url, headers: HEADERS, connections: 50, seconds: 5 })).rps,
    );
    gw.child.kill('SIGKILL');
  }
  const ratio = Math.round(((rps.rps_100000_keys ?? 0) / (rps.rps_10_keys ?? 1)) * 100) / 100;
  return { ...rps, rps_ratio_100k_over_10: ratio };
}

await main().finally(stopAll);
