import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { signLeadToken } from '../src/client/index.js';

export const SERVER_KEY = 'sk_bench_server_00000000000001';
export const STOREFRONT_KEY = 'sk_bench_storefront_000000002';
export const SECRET = 'bench-signing-secret-0000000001';
/** The lead token every token-path request carries. */
export const TOKEN = signLeadToken(SECRET, 'lead-1');
/** The path every request-path run sends, and the token path's headers (READ STOREFRONT + lead token). */
export const API = '/api/v2/merchant/orders';
export const tokenHeaders = () => ({ 'x-apikey': STOREFRONT_KEY, 'x-source': 'web', 'x-leadtoken': TOKEN });
/** A second STOREFRONT key, named `storefront-limited`: the only key a `limitedKeyOnly` policy names. */
export const LIMITED_KEY = 'sk_bench_storefront_limited_03';

/**
 * A bench config: the two keys the runs use, `extraKeys` more to grow the key table, and
 * optionally `originIps` entries on the storefront key (the client, 127.0.0.1, is the last one).
 */
export function writeBenchConfig(opts: {
  upstreamPort: number;
  /** `upstream.engine`: undici unless said. */
  engine?: string;
  extraKeys?: number;
  originIps?: number;
  logRequests?: 'all' | 'errors' | 'none';
  /** Tracing on, exporting to this OTLP traces URL at this sample ratio. */
  tracing?: { endpoint: string; ratio: number };
  /**
   * One rate-limit policy (per key, never reached), for every key or (`limited`) for
   * {@link LIMITED_KEY} alone, so that `storefront` is served without it.
   */
  rateLimit?: 'all' | 'limited' | undefined;
  workers?: number;
  /** `state.redis` at this port: the policy's counters (in memory without) and the revocation set. */
  redisPort?: number;
  /**
   * The shape of the `extraKeys`: `plain` (WRITE, one secret, nothing else: the request-path
   * runs) or `soak` (what a reviewed 100,000-key config holds: see {@link soakKey}).
   */
  keyShape?: 'plain' | 'soak';
}) {
  const dir = mkdtempSync(join(tmpdir(), 'leadgate-bench-'));
  const lines = [
    'listen: { host: 127.0.0.1, port: 0 }',
    'admin: { host: 127.0.0.1, port: 0 }',
    `upstream: { url: "http://127.0.0.1:${opts.upstreamPort}", engine: ${opts.engine ?? 'undici'} }`,
    'shutdown: { delay_s: 0, timeout_s: 1 }',
    'leads: { file: leads.yaml }',
    `log: { requests: ${opts.logRequests ?? 'all'} }`,
    ...(opts.workers ? [`workers: ${opts.workers}`] : []),
    ...(opts.rateLimit
      ? [
          `rate_limits: { policies: [{ name: bench, by: key, limit: 1000000000, window_s: 1${opts.rateLimit === 'limited' ? ', keys: [storefront-limited]' : ''} }] }`,
        ]
      : []),
    ...(opts.redisPort
      ? [`state: { redis: { url: "redis://127.0.0.1:${opts.redisPort}", timeout_ms: 50 } }`]
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
  if (opts.rateLimit === 'limited')
    lines.push(
      `  - { name: storefront-limited, key: "${LIMITED_KEY}", access_type: READ, purpose: STOREFRONT, signing_secret: "${SECRET}" }`,
    );
  const filler = opts.keyShape === 'soak' ? soakKey : plainKey;
  for (let i = 0; i < (opts.extraKeys ?? 0); i++) lines.push(filler(i));
  writeFileSync(join(dir, 'gateway.yaml'), `${lines.join('\n')}\n`);
  writeFileSync(join(dir, 'leads.yaml'), 'leads:\n  - { _id: lead-1, customer_id: cust-1 }\n');
  return join(dir, 'gateway.yaml');
}

/** A config of `keys` keys of the soak shape (beside the bench's own), for the load and start runs. */
export const writeSoakConfig = (keys: number, upstreamPort = 1) =>
  writeBenchConfig({ upstreamPort, extraKeys: keys, keyShape: 'soak' });

function plainKey(i: number): string {
  const n = String(i).padStart(8, '0');
  return `  - { name: k${n}, key: "sk_filler_key_${n}", access_type: WRITE, signing_secret: "filler-secret-${n}" }`;
}

/** 32 characters of base64url (192 bits), different for every `label`. */
const random = (label: string) => createHash('sha256').update(label).digest('base64url').slice(0, 32);

/** The kinds of key, in the proportions of the reviewed soak config. */
const KINDS = [
  'access_type: READ, purpose: SERVER',
  'access_type: READ, purpose: STOREFRONT',
  'access_type: READ, purpose: STOREFRONT',
  'access_type: WRITE',
  'access_type: WRITE',
];

/**
 * One key of the reviewed soak config's shape (100,000 of them: about 16.8 MiB): a 32-character
 * key, READ SERVER / READ STOREFRONT / WRITE; two keys in three with `origin_ips` (one to four
 * entries: addresses, IPv4 and IPv6 CIDRs, some ranges shared by many keys, as offices and NATs
 * are); one in four rotating (`signing_secrets`: the minting one and an old one with
 * `verify_until`), the rest with one `signing_secret`; one in ten with `expires_at`, one in
 * twenty with `cors_origins`.
 */
export function soakKey(i: number): string {
  const n = String(i).padStart(8, '0');
  const fields = [
    `name: k${String(i).padStart(6, '0')}`,
    `key: "sk_live_${random(`key ${i}`).slice(0, 24)}"`,
    KINDS[i % 5],
  ];
  if (i % 20 === 0) {
    fields.push(
      `signing_secrets: [{ kid: "2026-11", secret: "${random(`new ${i}`)}" }, ` +
        `{ kid: "2026-08", secret: "${random(`old ${i}`)}", verify_until: "2027-06-30T00:00:00Z" }]`,
    );
  } else fields.push(`signing_secret: "${random(`secret ${i}`)}"`);
  if (i % 5 < 2) fields.push(`origin_ips: [${originIps(i).join(', ')}]`);
  if (i % 20 === 3) fields.push('expires_at: "2027-11-30T00:00:00Z"');
  if (i % 20 === 7) fields.push(`cors_origins: ["https://shop-${n}.example.com"]`);
  return `  - { ${fields.join(', ')} }`;
}

function originIps(i: number): string[] {
  const a = (i >> 16) & 255;
  const b = (i >> 8) & 255;
  const c = i & 255;
  const all = [
    `"10.${a}.${b}.${c}"`,
    `"172.${16 + (a & 15)}.${b}.0/24"`,
    `"2001:db8:${a}:${(i & 0xffff).toString(16)}::/64"`,
    `"198.51.100.${c}"`,
  ];
  const shared = ['"203.0.113.0/24"', '"192.0.2.0/28"', '"2001:db8:ffff::/48"'];
  const list = all.slice(0, [1, 1, 2, 3][(i >> 1) % 4]);
  if (i % 5 === 0) list.push(shared[i % 3] as string);
  return list;
}
