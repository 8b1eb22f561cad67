import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const SERVER_KEY = 'sk_bench_server_00000000000001';
export const STOREFRONT_KEY = 'sk_bench_storefront_000000002';
export const SECRET = 'bench-signing-secret-0000000001';

/**
 * A bench config: the two keys the runs use, `extraKeys` more to grow the key table, and
 * optionally `originIps` entries on the storefront key (the client, 127.0.0.1, is the last one).
 */
export function writeBenchConfig(opts: {
  upstreamPort: number;
  engine: string;
  extraKeys?: number;
  originIps?: number;
  logRequests?: 'all' | 'errors' | 'none';
  /** Tracing on, exporting to this OTLP traces URL at this sample ratio. */
  tracing?: { endpoint: string; ratio: number };
  /** One rate-limit policy (per key, never reached), in memory or on the Redis at this port. */
  rateLimit?: { redisPort: number | null };
  workers?: number;
}) {
  const dir = mkdtempSync(join(tmpdir(), 'leadgate-bench-'));
  const lines = [
    'listen: { host: 127.0.0.1, port: 0 }',
    'admin: { host: 127.0.0.1, port: 0 }',
    `upstream: { url: "http://127.0.0.1:${opts.upstreamPort}", engine: ${opts.engine} }`,
    'shutdown: { delay_s: 0, timeout_s: 1 }',
    'leads: { file: leads.yaml }',
    `log: { requests: ${opts.logRequests ?? 'all'} }`,
    ...(opts.workers ? [`workers: ${opts.workers}`] : []),
    ...(opts.rateLimit
      ? [
          'rate_limits: { policies: [{ name: bench, by: key, limit: 1000000000, window_s: 1 }] }',
          ...(opts.rateLimit.redisPort === null
            ? []
            : [`state: { redis: { url: "redis://127.0.0.1:${opts.rateLimit.redisPort}", timeout_ms: 50 } }`]),
        ]
      : []),
    ...(opts.tracing
      ? [`tracing: { otlp_endpoint: "${opts.tracing.endpoint}", sample_ratio: ${opts.tracing.ratio} }`]
      : []),
    'keys:',
    `  - { name: server, key: "${SERVER_KEY}", access_type: READ, purpose: SERVER, signing_secret: "${SECRET}" }`,
  ];
  const ips = opts.originIps ?? 0;
  const origin =
    ips > 0
      ? `, origin_ips: [${Array.from({ length: ips - 1 }, (_, i) => `"10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}"`).join(', ')}, "127.0.0.1"]`
      : '';
  lines.push(
    `  - { name: storefront, key: "${STOREFRONT_KEY}", access_type: READ, purpose: STOREFRONT, signing_secret: "${SECRET}"${origin} }`,
  );
  for (let i = 0; i < (opts.extraKeys ?? 0); i++) {
    const n = String(i).padStart(8, '0');
    lines.push(
      `  - { name: k${n}, key: "sk_filler_key_${n}", access_type: WRITE, signing_secret: "filler-secret-${n}" }`,
    );
  }
  writeFileSync(join(dir, 'gateway.yaml'), `${lines.join('\n')}\n`);
  writeFileSync(join(dir, 'leads.yaml'), 'leads:\n  - { _id: lead-1, customer_id: cust-1 }\n');
  return join(dir, 'gateway.yaml');
}
