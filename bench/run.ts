import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { leadDigest, signLeadToken } from '../src/client/index.js';
import { SECRET, SERVER_KEY, STOREFRONT_KEY, writeBenchConfig } from './fixture.js';
import { hasWrk, type LoadResult, runLoad } from './load.js';

/**
 * `npm run bench`: everything on 127.0.0.1, one run, targets interleaved over several rounds.
 * BENCH_SECONDS (default 5), BENCH_ROUNDS (3), BENCH_CONNECTIONS (50), BENCH_SCALE=0 skips scale runs.
 */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));
const MAIN = here('../src/main.js');
const children: ChildProcess[] = [];

function start(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ port: number; child: ChildProcess }> {
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env },
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let buf = '';
    const onData = (chunk: Buffer) => {
      buf += chunk.toString();
      const ready = /"listen":"[^"]*:(\d+)"/.exec(buf) ?? /^(\d+)\n/.exec(buf);
      if (ready?.[1]) {
        buf = '';
        child.stdout?.off('data', onData);
        child.stdout?.resume(); // keep draining its log lines, as a log shipper would
        resolve({ port: Number(ready[1]), child });
      }
    };
    child.stdout?.on('data', onData);
    child.on('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}`)));
  });
}

function startNginx(upstreamPort: number): Promise<number> | null {
  try {
    execFileSync('nginx', ['-v'], { stdio: 'ignore' });
  } catch {
    return null;
  }
  const dir = mkdtempSync(join(tmpdir(), 'leadgate-nginx-'));
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  writeFileSync(
    join(dir, 'nginx.conf'),
    `worker_processes 1; daemon off; pid ${dir}/nginx.pid; error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log ${dir}/access.log;
  upstream up { server 127.0.0.1:${upstreamPort}; keepalive 64; }
  server { listen 127.0.0.1:${port}; location / {
    proxy_pass http://up; proxy_http_version 1.1; proxy_set_header Connection ""; } }
}
`,
  );
  const child = spawn('nginx', ['-p', dir, '-c', join(dir, 'nginx.conf')], { stdio: 'ignore' });
  children.push(child);
  return new Promise((resolve) => setTimeout(() => resolve(port), 500));
}

interface Target {
  readonly name: string;
  readonly port: number;
  readonly path: string;
  headers(): Record<string, string>;
  readonly expectStatus?: number;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
};

async function measure(targets: Target[], rounds: number, seconds: number, connections: number) {
  const runs = new Map<string, LoadResult[]>(targets.map((t) => [t.name, []]));
  // warm-up: let each process's JIT settle before anything counts
  for (const t of targets) {
    await runLoad({
      url: `http://127.0.0.1:${t.port}${t.path}`,
      headers: t.headers(),
      connections,
      seconds: 1,
    });
  }
  for (let round = 1; round <= rounds; round++) {
    for (const t of targets) {
      const r = await runLoad({
        url: `http://127.0.0.1:${t.port}${t.path}`,
        headers: t.headers(),
        connections,
        seconds,
      });
      runs.get(t.name)?.push(r);
      process.stderr.write(`  round ${round} ${t.name.padEnd(34)} ${Math.round(r.rps)} req/s\n`);
    }
  }
  return new Map(
    targets.map((t) => {
      const rs = runs.get(t.name) ?? [];
      return [
        t.name,
        {
          rps: median(rs.map((r) => r.rps)),
          p50: median(rs.map((r) => r.p50)),
          p99: median(rs.map((r) => r.p99)),
          errors: rs.reduce((a, r) => a + r.errors, 0),
        },
      ];
    }),
  );
}

async function main() {
  process.stderr.write(
    `leadgate bench: ${hasWrk ? 'wrk' : 'autocannon (install Debian wrk for the reference numbers)'}, ${cpus().length} cores, ${ROUNDS}×${SECONDS}s, ${CONNECTIONS} connections\n`,
  );
  const upstream = await start([here('./upstream.js')]);
  const nginxPort = await startNginx(upstream.port);
  if (nginxPort === null)
    process.stderr.write('  nginx not installed: its row is left out (Debian: nginx-light)\n');
  const bareUndici = await start([here('./bare-proxy.js'), 'undici', String(upstream.port)]);
  const bareHttpProxy = await start([here('./bare-proxy.js'), 'http-proxy', String(upstream.port)]);
  const lg = await start([
    MAIN,
    'serve',
    '--config',
    writeBenchConfig({ upstreamPort: upstream.port, engine: 'undici' }),
  ]);
  const lgQuiet = await start([
    MAIN,
    'serve',
    '--config',
    writeBenchConfig({ upstreamPort: upstream.port, engine: 'undici', logRequests: 'errors' }),
  ]);
  const lgHp = await start([
    MAIN,
    'serve',
    '--config',
    writeBenchConfig({ upstreamPort: upstream.port, engine: 'http-proxy' }),
  ]);

  const token = signLeadToken(SECRET, 'lead-1');
  const server = () => ({ 'x-apikey': SERVER_KEY, 'x-source': 'web' });
  const storefront = () => ({ 'x-apikey': STOREFRONT_KEY, 'x-source': 'web', 'x-leadtoken': token });
  const digest = () => {
    const ts = Math.floor(Date.now() / 1000);
    return {
      'x-apikey': STOREFRONT_KEY,
      'x-source': 'web',
      'x-timestamp': String(ts),
      'x-leaddigest': leadDigest(SECRET, 'cust-1', ts),
    };
  };
  const api = '/api/v2/merchant/orders';
  const targets: Target[] = [
    { name: 'upstream direct', port: upstream.port, path: api, headers: () => ({}) },
    ...(nginxPort === null
      ? []
      : [{ name: 'nginx (1 worker, keepalive)', port: nginxPort, path: api, headers: () => ({}) }]),
    { name: 'bare proxy: undici', port: bareUndici.port, path: api, headers: () => ({}) },
    { name: 'bare proxy: http-proxy', port: bareHttpProxy.port, path: api, headers: () => ({}) },
    { name: 'leadgate (a) READ SERVER', port: lg.port, path: api, headers: server },
    { name: 'leadgate (b) STOREFRONT + token', port: lg.port, path: api, headers: storefront },
    {
      name: 'leadgate (c) lookup with digest',
      port: lg.port,
      path: '/api/v2/merchant/leads/x?customer_id=cust-1',
      headers: digest,
    },
    {
      name: 'leadgate (d) refused (no key)',
      port: lg.port,
      path: api,
      headers: () => ({ 'x-source': 'web' }),
      expectStatus: 401,
    },
    { name: 'leadgate (b), log.requests: errors', port: lgQuiet.port, path: api, headers: storefront },
    { name: 'leadgate (b) on http-proxy', port: lgHp.port, path: api, headers: storefront },
  ];
  const results = await measure(targets, ROUNDS, SECONDS, CONNECTIONS);

  const bare = results.get('bare proxy: undici')?.rps ?? Number.NaN;
  const bareHp = results.get('bare proxy: http-proxy')?.rps ?? Number.NaN;
  const nginx = results.get('nginx (1 worker, keepalive)')?.rps ?? Number.NaN;
  const rows = targets.map((t) => {
    const r = results.get(t.name);
    const floor = t.name.includes('http-proxy') ? bareHp : bare;
    return {
      target: t.name,
      rps: Math.round(r?.rps ?? 0),
      p50_us: Math.round(r?.p50 ?? 0),
      p99_us: Math.round(r?.p99 ?? 0),
      vs_bare_proxy: Number(((r?.rps ?? 0) / floor).toFixed(2)),
      vs_nginx: Number(((r?.rps ?? 0) / nginx).toFixed(2)),
      unexpected_errors: t.expectStatus === undefined ? (r?.errors ?? 0) : 0,
    };
  });

  process.stderr.write('latency pass: 1 connection\n');
  const single = await measure(
    [targets[0] as Target, targets.find((t) => t.name.startsWith('leadgate (b) STOREFRONT')) as Target],
    1,
    Math.max(3, Math.round(SECONDS / 2)),
    1,
  );
  const d = single.get('upstream direct');
  const b = single.get('leadgate (b) STOREFRONT + token');
  const added = {
    p50_us: Math.round((b?.p50 ?? 0) - (d?.p50 ?? 0)),
    p99_us: Math.round((b?.p99 ?? 0) - (d?.p99 ?? 0)),
  };

  const scale: Array<Record<string, number | string>> = [];
  if (process.env.BENCH_SCALE !== '0') {
    process.stderr.write('scale runs: (b) with many keys and a long origin_ips list\n');
    for (const [label, extraKeys, originIps] of [
      ['10 keys', 8, 0],
      ['10,000 keys', 9_998, 0],
      ['100,000 keys', 99_998, 0],
      ['1,000 origin_ips on the key', 0, 1000],
    ] as const) {
      const g = await start([
        MAIN,
        'serve',
        '--config',
        writeBenchConfig({ upstreamPort: upstream.port, engine: 'undici', extraKeys, originIps }),
      ]);
      const r = (
        await measure(
          [{ name: label, port: g.port, path: api, headers: storefront }],
          1,
          SECONDS,
          CONNECTIONS,
        )
      ).get(label);
      g.child.kill('SIGKILL');
      scale.push({
        run: label,
        rps: Math.round(r?.rps ?? 0),
        vs_bare_proxy: Number(((r?.rps ?? 0) / bare).toFixed(2)),
      });
    }
    const load = JSON.parse(
      execFileSync(process.execPath, ['--expose-gc', here('./config-load.js'), '100000'], {
        encoding: 'utf8',
      }),
    ) as Record<string, number>;
    scale.push({
      run: 'config load, 100,000 keys',
      load_ms: load.load_ms ?? 0,
      heap_bytes_per_key: load.heap_bytes_per_key ?? 0,
    });
  }

  const report = {
    when: new Date().toISOString(),
    machine: { cores: cpus().length, cpu: cpus()[0]?.model ?? 'unknown', node: process.version },
    load: { tool: hasWrk ? 'wrk' : 'autocannon', connections: CONNECTIONS, seconds: SECONDS, rounds: ROUNDS },
    rows,
    latency_added_over_direct: added,
    scale,
  };
  mkdirSync(here('../../bench/results'), { recursive: true });
  writeFileSync(here('../../bench/results/latest.json'), `${JSON.stringify(report, null, 2)}\n`);
  console.log(`\n| target | req/s | p50 µs | p99 µs | ÷ bare proxy | ÷ nginx |\n|---|---|---|---|---|---|`);
  for (const r of rows)
    console.log(
      `| ${r.target} | ${r.rps} | ${r.p50_us} | ${r.p99_us} | ${r.vs_bare_proxy} | ${r.vs_nginx} |`,
    );
  console.log(
    `\nleadgate (b) added latency over direct, 1 connection: p50 ${added.p50_us} µs, p99 ${added.p99_us} µs`,
  );
  if (scale.length > 0) {
    console.log('\n| scale run | result |\n|---|---|');
    for (const s of scale)
      console.log(
        `| ${s.run} | ${Object.entries(s)
          .filter(([k]) => k !== 'run')
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')} |`,
      );
  }
  console.log(
    `\n${hasWrk ? 'wrk' : 'autocannon'}, ${cpus().length} cores (${report.machine.cpu}), node ${process.version}; JSON in bench/results/latest.json`,
  );
}

const stopAll = () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
};
process.on('exit', stopAll);
main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(stopAll);
