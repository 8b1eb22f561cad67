import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { leadDigest } from '../../src/client/index.js';

export const KEYS = {
  storefront: { key: 'sk_storefront_test_000000000001', secret: 'storefront-secret-0000000000001' },
  server: { key: 'sk_server_test_00000000000000002', secret: 'server-secret-000000000000000002' },
  write: { key: 'sk_write_test_000000000000000003', secret: 'write-secret-0000000000000000003' },
  fenced: { key: 'sk_fenced_test_0000000000000004', secret: 'fenced-secret-000000000000000004' },
} as const;

export const LEADS_YAML = `leads:
  - { _id: "lead-1", customer_id: "cust-1", email: "a@example.com" }
  - { _id: "lead-2", customer_id: "gid://shop/Customer/7:9", email: "b@example.com" }
  - { _id: "lead-3", customer_id: "kunde 3 ü", email: "c@example.com" }
`;

/** Keys for the tests: one of each kind, plus one fenced to 10.9.9.9 (never this machine). */
export function keysYaml(): string {
  return `keys:
  - { name: storefront, key: "${KEYS.storefront.key}", access_type: READ, purpose: STOREFRONT, signing_secret: "${KEYS.storefront.secret}" }
  - { name: server, key: "${KEYS.server.key}", access_type: READ, purpose: SERVER, signing_secret: "${KEYS.server.secret}" }
  - { name: writer, key: "${KEYS.write.key}", access_type: WRITE, signing_secret: "${KEYS.write.secret}" }
  - { name: fenced, key: "${KEYS.fenced.key}", access_type: READ, purpose: SERVER, signing_secret: "${KEYS.fenced.secret}", origin_ips: [10.9.9.9] }
`;
}

/** Writes a config folder in a fresh temp dir and returns the config file's path. */
export function writeConfig(opts: {
  upstream: string;
  extra?: string;
  keys?: string;
  leads?: string | null;
  timeoutMs?: number;
  engine?: 'undici' | 'http-proxy';
  /** More fields of the `upstream:` map, e.g. `underscore_headers: pass`. */
  upstreamFields?: string;
  /** More fields of the `listen:` map, e.g. `tls: { ... }`. */
  listenFields?: string;
  /** The `shutdown:` map; a short drain by default. */
  shutdown?: string;
}): string {
  const dir = mkdtempSync(join(tmpdir(), 'leadgate-test-'));
  const file = join(dir, 'gateway.yaml');
  if (opts.leads !== null) writeFileSync(join(dir, 'leads.yaml'), opts.leads ?? LEADS_YAML);
  writeFileSync(
    file,
    `listen: { host: 127.0.0.1, port: 0${opts.listenFields ? `, ${opts.listenFields}` : ''} }
admin: { host: 127.0.0.1, port: 0 }
upstream: { url: "${opts.upstream}", timeout_ms: ${opts.timeoutMs ?? 2000}, engine: ${opts.engine ?? 'undici'}${opts.upstreamFields ? `, ${opts.upstreamFields}` : ''} }
shutdown: ${opts.shutdown ?? '{ delay_s: 0, timeout_s: 2 }'}
${opts.extra ?? ''}
${opts.keys ?? keysYaml()}`,
  );
  return file;
}

/** Path B's lookup: the storefront key, `customerId` and a digest over `ts` (now by default). */
export function digestLookup(customerId = 'cust-1', ts = Math.floor(Date.now() / 1000)) {
  return {
    path: `/api/v2/merchant/leads/x?customer_id=${encodeURIComponent(customerId)}`,
    headers: {
      'x-apikey': KEYS.storefront.key,
      'x-source': 'web',
      'x-timestamp': String(ts),
      'x-leaddigest': leadDigest(KEYS.storefront.secret, customerId, ts),
    },
  };
}
