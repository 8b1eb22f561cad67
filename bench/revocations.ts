import { RequestFacts } from '../src/auth/facts.js';
import { createPipeline } from '../src/auth/pipeline.js';
import { loadConfig } from '../src/config/load.js';
import { createRevocationSet } from '../src/revocation/set.js';
import { revocationKeys, revocationStore } from '../src/revocation/store.js';
import { openRedisLink } from '../src/store/index.js';
import { writeBenchConfig } from './fixture.js';
import { median } from './median.js';

/**
 * Stores `leads` lead revocations and `keys` key revocations in the Redis at `port`, through the
 * format the gateways read (src/revocation/store.ts), none of them for the bench's own lead or
 * keys: the token path looks each request up in a full set and finds nothing.
 */
export async function seedRevocations(port: number, counts: { leads: number; keys: number }): Promise<void> {
  const link = openRedisLink(
    {
      target: { kind: 'url', url: `redis://127.0.0.1:${port}` },
      password: undefined,
      timeoutMs: 1_000,
      keyPrefix: 'leadgate:',
    },
    () => {},
  );
  const store = revocationStore(link, revocationKeys('leadgate:'));
  // redis-server may still be starting: the link reconnects by itself, calls fail until then
  const until = Date.now() + 20_000;
  for (;;) {
    try {
      await store.poll('bench-seed', '');
      break;
    } catch (err) {
      if (Date.now() > until) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  const meta = { by: 'bench', reason: 'bench', lifetimeMs: 3_660_000 };
  for (let i = 0; i < counts.leads; i += 100) {
    await Promise.all(
      Array.from({ length: Math.min(100, counts.leads - i) }, (_, j) =>
        store.revoke('lead', `revoked-lead-${i + j}`, meta),
      ),
    );
  }
  for (let i = 0; i < counts.keys; i++)
    await store.revoke('key', `revoked-key-${i}`, { ...meta, lifetimeMs: 0 });
  link.close();
}

/**
 * The same cost without HTTP's noise: the §3 pipeline of a bench config, called in this process
 * for the token path's request, with an empty set (A) and with 10,000 leads and 1,000 keys (B),
 * in alternating slices (A B B A); CPU per call from process.cpuUsage, the median of the paired
 * differences.
 */
export function pipelineCost(
  headers: Record<string, string>,
  path: string,
  rounds = 10,
  calls = 200_000,
): { a_ns: number; b_ns: number; over_ns: number } {
  const config = loadConfig(writeBenchConfig({ upstreamPort: 1, engine: 'undici' }), { env: {} });
  const none = createRevocationSet();
  none.apply({ version: 'none', entries: [] });
  const full = createRevocationSet();
  const at = Date.now();
  const entry = (kind: 'key' | 'lead', name: string) => ({
    kind,
    name,
    atMs: at,
    by: 'bench',
    reason: '',
    untilMs: kind === 'lead' ? at + 3_660_000 : null,
  });
  full.apply({
    version: 'full',
    entries: [
      ...Array.from({ length: 10_000 }, (_, i) => entry('lead', `revoked-lead-${i}`)),
      ...Array.from({ length: 1_000 }, (_, i) => entry('key', `revoked-key-${i}`)),
    ],
  });
  const a = createPipeline(config, none);
  const b = createPipeline(config, full);
  const nowS = Math.floor(Date.now() / 1000);
  const facts = new RequestFacts('GET', path, headers, '127.0.0.1', nowS, config.trustedProxies);
  const slice = (f: typeof a) => {
    const start = process.cpuUsage();
    for (let i = 0; i < calls; i++) if (f(facts).principal === null) throw new Error('refused');
    const used = process.cpuUsage(start);
    return ((used.user + used.system) * 1000) / calls;
  };
  slice(a);
  slice(b);
  const as: number[] = [];
  const bs: number[] = [];
  for (let r = 0; r < rounds; r++) {
    // A B B A, then B A A B: each side's two slices averaged
    const [x, y] = r % 2 === 0 ? [a, b] : [b, a];
    const [x1, y1, y2, x2] = [slice(x), slice(y), slice(y), slice(x)];
    as.push(r % 2 === 0 ? (x1 + x2) / 2 : (y1 + y2) / 2);
    bs.push(r % 2 === 0 ? (y1 + y2) / 2 : (x1 + x2) / 2);
  }
  const diffs = bs.map((v, i) => v - (as[i] ?? 0));
  return {
    a_ns: Math.round(median(as)),
    b_ns: Math.round(median(bs)),
    over_ns: Math.round(median(diffs)),
  };
}
