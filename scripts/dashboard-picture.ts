import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { leadDigest, signLeadToken } from '../src/client/index.js';
import { startGateway } from '../src/gateway.js';
import { createLogger } from '../src/observability/log.js';

/**
 * `npm run dashboard:picture`: the dashboard's queries, plotted from a real Prometheus (Debian
 * `prometheus`) that scrapes a leadgate under a minute of mixed traffic, into docs/guides/dashboard.svg.
 * Everything on 127.0.0.1; it stops by itself after about 80 s.
 */
const SECONDS = Number(process.env.PICTURE_SECONDS ?? 60);
const here = (f: string) => new URL(f, import.meta.url);
const SECRET = 'picture-signing-secret-000000000001';
const KEYS = {
  server: 'sk_picture_server_0000000000001',
  storefront: 'sk_picture_store_00000000000002',
  writer: 'sk_picture_writer_0000000000003',
};

interface Panel {
  title: string;
  targets: Array<{ expr: string; legendFormat: string }>;
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'leadgate-picture-'));
  const upstream = http.createServer((req, res) => {
    req.resume();
    // a backend that answers in 2-20 ms, now and then 150 ms
    setTimeout(() => res.end('{"ok":true}'), Math.random() < 0.02 ? 150 : 2 + Math.random() * 18);
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const upstreamPort = (upstream.address() as AddressInfo).port;
  const expiry = new Date(Date.now() + 9 * 86400_000).toISOString().replace(/\.\d+Z$/, 'Z');
  writeFileSync(join(dir, 'leads.yaml'), 'leads:\n  - { _id: lead-1, customer_id: cust-1 }\n');
  writeFileSync(
    join(dir, 'gateway.yaml'),
    `listen: { host: 127.0.0.1, port: 0 }
admin: { host: 127.0.0.1, port: 0 }
upstream: { url: "http://127.0.0.1:${upstreamPort}" }
leads: { file: leads.yaml }
rate_limits: { policies: [{ name: writers, by: key, limit: 60, window_s: 60, keys: [writer] }] }
keys:
  - { name: server, key: "${KEYS.server}", access_type: READ, purpose: SERVER, signing_secret: "${SECRET}" }
  - { name: storefront-web, key: "${KEYS.storefront}", access_type: READ, purpose: STOREFRONT, signing_secret: "${SECRET}", expires_at: "${expiry}" }
  - { name: writer, key: "${KEYS.writer}", access_type: WRITE, signing_secret: "${SECRET}" }
`,
  );
  const quiet = { write: () => true };
  const gw = await startGateway({
    configPath: join(dir, 'gateway.yaml'),
    logger: createLogger({ destination: quiet }),
    watch: false,
  });
  const promPort = 20_000 + Math.floor(Math.random() * 20_000);
  writeFileSync(
    join(dir, 'prometheus.yml'),
    `global: { scrape_interval: 1s }\nscrape_configs:\n  - job_name: leadgate\n    static_configs: [{ targets: ["127.0.0.1:${gw.adminPort}"] }]\n`,
  );
  const prom = spawn(
    'prometheus',
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${promPort}`,
    ],
    { stdio: 'ignore' },
  );
  const api = async <T>(path: string): Promise<T> =>
    (await (await fetch(`http://127.0.0.1:${promPort}${path}`)).json()) as T;
  try {
    await sleep(7_000); // Prometheus applies new targets every 5 s
    const start = Date.now() / 1000;
    await traffic(gw.apiPort, SECONDS, () => void gw.reload('picture'));
    await sleep(2_000);
    const end = Date.now() / 1000;
    const dashboard = JSON.parse(
      readFileSync(here('../../deploy/monitoring/grafana-dashboard.json'), 'utf8'),
    ) as { panels: Panel[] };
    const plots = [];
    for (const panel of dashboard.panels) {
      const series = [];
      for (const t of panel.targets) {
        const q = t.expr.replaceAll('$__rate_interval', '10s').replaceAll('$job', '.*');
        const r = await api<{
          data: { result: Array<{ metric: Record<string, string>; values: Array<[number, string]> }> };
        }>(`/api/v1/query_range?query=${encodeURIComponent(q)}&start=${start}&end=${end}&step=2`);
        for (const s of r.data.result) {
          const name = t.legendFormat.replace(/\{\{(\w+)\}\}/g, (_m, l: string) => s.metric[l] ?? '');
          series.push({ name, points: s.values.map(([x, y]) => [x - start, Number(y)] as [number, number]) });
        }
      }
      plots.push({ title: panel.title, series });
    }
    const out = here('../../docs/guides/dashboard.svg');
    writeFileSync(out, svg(plots, end - start));
    process.stdout.write(`wrote ${out.pathname}\n`);
  } finally {
    prom.kill('SIGKILL');
    await gw.close();
    upstream.close();
  }
}

/** About 40 requests a second: mostly served, a wave of bad tokens in the middle, writers over their limit, lookups. */
async function traffic(port: number, seconds: number, reload: () => void) {
  const until = Date.now() + seconds * 1000;
  const token = signLeadToken(SECRET, 'lead-1');
  let tick = 0;
  while (Date.now() < until) {
    const t = (seconds * 1000 - (until - Date.now())) / 1000;
    const ts = Math.floor(Date.now() / 1000);
    const sends = [
      get(port, { 'x-apikey': KEYS.server, 'x-source': 'web' }),
      get(port, { 'x-apikey': KEYS.storefront, 'x-source': 'web', 'x-leadtoken': token }),
      get(port, { 'x-apikey': KEYS.writer, 'x-source': 'web' }),
    ];
    if (t > seconds * 0.35 && t < seconds * 0.65)
      sends.push(get(port, { 'x-apikey': KEYS.storefront, 'x-source': 'web', 'x-leadtoken': `${token}x` }));
    if (tick % 5 === 0)
      sends.push(
        get(
          port,
          {
            'x-apikey': KEYS.storefront,
            'x-source': 'web',
            'x-timestamp': String(ts),
            'x-leaddigest': leadDigest(SECRET, 'cust-1', ts),
          },
          '/api/v2/merchant/leads/x?customer_id=cust-1',
        ),
      );
    if (tick === Math.round(seconds * 5)) reload();
    await Promise.all(sends);
    tick++;
    await sleep(100);
  }
}

function get(port: number, headers: Record<string, string>, path = '/api/v2/merchant/orders'): Promise<void> {
  return new Promise((resolve) => {
    http
      .get({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => res.resume().on('end', resolve))
      .on('error', () => resolve());
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const COLORS = ['#3274d9', '#e02f44', '#56a64b', '#ff9830', '#8f3bb8', '#14a3a3', '#a16d3a'];
const xmlText = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

/** Small multiples, two a row, like the dashboard's grid: each panel's series as lines. */
function svg(
  plots: Array<{ title: string; series: Array<{ name: string; points: Array<[number, number]> }> }>,
  span: number,
): string {
  const W = 480;
  const H = 200;
  const parts: string[] = [];
  plots.forEach((p, i) => {
    const x0 = (i % 2) * (W + 20) + 10;
    const y0 = Math.floor(i / 2) * (H + 20) + 10;
    const values = p.series.flatMap((s) => s.points.map(([, y]) => y)).filter(Number.isFinite);
    const max = Math.max(1e-9, ...values);
    const min = Math.min(0, ...values);
    const px = (x: number) => x0 + 40 + (x / span) * (W - 60);
    const py = (y: number) => y0 + H - 50 - ((y - min) / (max - min)) * (H - 80);
    parts.push(`<rect x="${x0}" y="${y0}" width="${W}" height="${H}" fill="#181b1f" rx="4"/>`);
    parts.push(
      `<text x="${x0 + 10}" y="${y0 + 18}" fill="#ccccdc" font-size="13" font-weight="bold">${xmlText(p.title)}</text>`,
    );
    parts.push(`<text x="${x0 + 4}" y="${py(max) + 4}" fill="#8e8e8e" font-size="10">${fmt(max)}</text>`);
    parts.push(`<text x="${x0 + 4}" y="${py(min) + 4}" fill="#8e8e8e" font-size="10">${fmt(min)}</text>`);
    parts.push(`<line x1="${px(0)}" y1="${py(min)}" x2="${px(span)}" y2="${py(min)}" stroke="#444"/>`);
    p.series.slice(0, 7).forEach((s, j) => {
      const d = s.points
        .filter(([, y]) => Number.isFinite(y))
        .map(([x, y]) => `${px(x).toFixed(1)},${py(y).toFixed(1)}`)
        .join(' ');
      parts.push(
        `<polyline fill="none" stroke="${COLORS[j % COLORS.length]}" stroke-width="1.5" points="${d}"/>`,
      );
      parts.push(
        `<text x="${x0 + 40 + (j % 3) * 145}" y="${y0 + H - 28 + Math.floor(j / 3) * 12}" fill="${COLORS[j % COLORS.length]}" font-size="10">■ ${xmlText(s.name).slice(0, 28)}</text>`,
      );
    });
    if (p.series.length === 0)
      parts.push(
        `<text x="${x0 + W / 2 - 30}" y="${y0 + H / 2}" fill="#8e8e8e" font-size="11">no data</text>`,
      );
  });
  const rows = Math.ceil(plots.length / 2);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${2 * W + 40}" height="${rows * (H + 20) + 10}" font-family="sans-serif">\n<title>leadgate dashboard queries over a minute of traffic</title>\n<rect width="100%" height="100%" fill="#111217"/>\n${parts.join('\n')}\n</svg>\n`;
}

function fmt(v: number): string {
  if (Math.abs(v) >= 100) return v.toFixed(0);
  if (Math.abs(v) >= 1) return v.toFixed(1);
  return v.toPrecision(2);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
