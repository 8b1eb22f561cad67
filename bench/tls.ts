import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { makePki } from '../test/helpers/certs.js';
import { cpuMicros } from './cpu.js';
import { SERVER_KEY, writeBenchConfig } from './fixture.js';
import { startNginx } from './nginx.js';
import { serve, startUpstream, stopAll } from './process.js';

/**
 * `npm run bench:tls` (issue 49, CONTRACT §11): CPU per request of leadgate's TLS listener against
 * nginx's TLS on the same machine, both proxying to the same upstream, in three ways a client
 * connects: kept alive; a new connection per request with TLS session resumption; and without
 * it. Then the PROXY protocol header's cost: a new plain connection per request, with and without
 * a v1 header in front. CPU is the serving process's utime + stime (/proc) ÷ requests.
 * BENCH_TLS_REQUESTS (1500) per row, BENCH_TLS_CONCURRENCY (8).
 */
const REQUESTS = Number(process.env.BENCH_TLS_REQUESTS ?? 1500);
const CONCURRENCY = Number(process.env.BENCH_TLS_CONCURRENCY ?? 8);
const PATH = '/api/v2/merchant/orders';
const HEADERS = { 'x-apikey': SERVER_KEY, 'x-source': 'web' };

/** leadgate with these `listen:` fields, its access log on errors only (nginx's is off). */
const leadgate = (upstreamPort: number, listen?: string) => {
  const config = writeBenchConfig({ upstreamPort, engine: 'undici', logRequests: 'errors', listen });
  return serve(config);
};

type Send = () => Promise<number>;

/** `REQUESTS` requests, `CONCURRENCY` at a time; µs of `pid`'s CPU per request, and failures. */
async function measure(pid: number, send: Send): Promise<{ us: number; failed: number }> {
  for (let i = 0; i < 50; i++) await send().catch(() => 0); // warm-up
  const before = cpuMicros(pid);
  let next = 0;
  let failed = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < REQUESTS) {
        const status = await send().catch(() => 0);
        if (status !== 200) failed++;
      }
    }),
  );
  return { us: (cpuMicros(pid) - before) / REQUESTS, failed };
}

function httpsSender(port: number, ca: string, agent: https.Agent | false): Send {
  return () =>
    new Promise((resolve, reject) => {
      https
        .get(
          { host: '127.0.0.1', port, path: PATH, headers: HEADERS, ca, agent, servername: 'localhost' },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          },
        )
        .on('error', reject);
    });
}

function plainSender(port: number, proxyHeader: boolean): Send {
  return () =>
    new Promise((resolve, reject) => {
      const req = http.request({
        host: '127.0.0.1',
        port,
        path: PATH,
        headers: HEADERS,
        agent: false,
        createConnection: () => {
          const socket = net.connect(port, '127.0.0.1');
          if (proxyHeader)
            socket.write(
              `PROXY TCP4 198.51.100.7 127.0.0.1 ${40000 + Math.floor(Math.random() * 20000)} ${port}\r\n`,
            );
          return socket;
        },
      });
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.end();
    });
}

async function main(): Promise<void> {
  const upstream = await startUpstream();
  const pki = makePki();
  const tls = pki.server('tls');
  const ca = readFileSync(pki.caCert, 'utf8');
  const lg = await leadgate(upstream.port, `tls: { cert_file: ${tls.cert}, key_file: ${tls.key} }`);
  const nginx = await startNginx(upstream.port, {
    http: 'access_log off; ssl_session_cache shared:SSL:1m;',
    listen: ' ssl',
    server: `ssl_certificate ${tls.cert}; ssl_certificate_key ${tls.key}; ssl_protocols TLSv1.2 TLSv1.3;`,
  });
  const rows: string[] = [];
  const row = (name: string, r: { us: number; failed: number }) =>
    rows.push(`| ${name} | ${r.us.toFixed(0)} | ${r.failed} |`);
  const targets = [
    { name: 'leadgate TLS', port: lg.port, pid: lg.pid },
    ...(nginx === null ? [] : [{ name: 'nginx TLS', port: nginx.port, pid: nginx.pid }]),
  ];
  for (const t of targets) {
    const keep = new https.Agent({ keepAlive: true, maxSockets: CONCURRENCY, ca });
    row(`${t.name}, kept alive`, await measure(t.pid, httpsSender(t.port, ca, keep)));
    keep.destroy();
    const resumed = new https.Agent({ keepAlive: false, maxCachedSessions: 100, ca });
    row(`${t.name}, new connection, resumption on`, await measure(t.pid, httpsSender(t.port, ca, resumed)));
    const full = new https.Agent({ keepAlive: false, maxCachedSessions: 0, ca });
    row(`${t.name}, new connection, resumption off`, await measure(t.pid, httpsSender(t.port, ca, full)));
  }
  const plain = await leadgate(upstream.port);
  const proxied = await leadgate(upstream.port, 'proxy_protocol: { from: [127.0.0.1] }');
  const without = await measure(plain.pid, plainSender(plain.port, false));
  const withHeader = await measure(proxied.pid, plainSender(proxied.port, true));
  row('leadgate plain, new connection per request', without);
  row('leadgate plain + PROXY v1 header, new connection per request', withHeader);
  process.stdout.write(
    `requests per row: ${REQUESTS}, ${CONCURRENCY} at a time; CPU of the serving process only\n\n| target | CPU µs/request | failed |\n|---|---|---|\n${rows.join('\n')}\n\nPROXY header: ${(withHeader.us - without.us).toFixed(0)} µs of CPU per connection (difference of the last two rows)\n`,
  );
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(stopAll);
