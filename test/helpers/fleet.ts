import { createHash } from 'node:crypto';
import { leadDigest } from '../../src/client/index.js';
import { keySlot } from '../../src/store/cluster.js';
import { clusterClaimKeys } from '../../src/store/shards.js';
import { ask } from './client.js';
import { KEYS } from './fixture.js';
import type { Served } from './process.js';

/** A lookup's answer as `200` or `<status> <code>`. */
export type Verdict = string;

export const nowS = () => Math.floor(Date.now() / 1000);
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A digest lookup for `cust-<customer>` stamped `ts`, at `port`. */
export async function lookup(port: number, customer: number, ts: number): Promise<Verdict> {
  const r = await ask(port, {
    path: `/api/v2/merchant/leads/x?customer_id=cust-${customer}`,
    headers: {
      'x-apikey': KEYS.storefront.key,
      'x-source': 'web',
      'x-timestamp': String(ts),
      'x-leaddigest': leadDigest(KEYS.storefront.secret, `cust-${customer}`, ts),
    },
  });
  return r.status === 200 ? '200' : `${r.status} ${r.json().code}`;
}

/** The hash slot the claim of that digest lands on (src/admission/single-use.ts keys it so). */
export function claimSlot(prefix: string, customer: number, ts: number): number {
  const digest = leadDigest(KEYS.storefront.secret, `cust-${customer}`, ts);
  const hash = createHash('sha256').update(digest.toLowerCase()).digest('hex');
  return keySlot(clusterClaimKeys(prefix, `digest:storefront:${hash}`).key);
}

/** Whether `slot` lies in ranges written as CLUSTER NODES does (`0-5460 10923`). */
export function inRanges(slot: number, ranges: string): boolean {
  return ranges.split(' ').some((range) => {
    const [a, b] = range.split('-').map(Number);
    return a !== undefined && slot >= a && slot <= (b ?? a);
  });
}

/** `count` requests at once, spread over the gateways, by `apikey` on the orders path: their statuses. */
export async function burst(gateways: readonly Served[], apikey: string, count: number): Promise<number[]> {
  return Promise.all(
    Array.from({ length: count }, (_, i) =>
      ask((gateways[i % gateways.length] as Served).apiPort, {
        path: '/api/v2/merchant/orders',
        headers: { 'x-apikey': apikey, 'x-source': 'web' },
      }).then((r) => r.status),
    ),
  );
}

export interface Sent {
  readonly sent: number;
  readonly at: number;
  readonly stamp: number;
  readonly slot: number;
  readonly answer: Verdict;
  /** The same digest again at another gateway, when the first was admitted. */
  readonly replay: Verdict | null;
}

/**
 * Steady lookups through every gateway until `stop()`, each with a digest of its own stamped as
 * it is sent; every admitted digest is presented again at the next gateway (a replay).
 */
export function steadyLookups(gateways: readonly Served[], prefix: string, customers: number) {
  const sent: Sent[] = [];
  let stopped = false;
  let n = 0;
  const loops = gateways.map(async (gw, g) => {
    const other = gateways[(g + 1) % gateways.length] as Served;
    while (!stopped) {
      const customer = n++ % customers;
      const started = Date.now();
      const stamp = nowS();
      const answer = await lookup(gw.apiPort, customer, stamp);
      const replay = answer === '200' ? await lookup(other.apiPort, customer, stamp) : null;
      sent.push({
        sent: started,
        at: Date.now(),
        stamp,
        slot: claimSlot(prefix, customer, stamp),
        answer,
        replay,
      });
      await sleep(20);
    }
  });
  return {
    sent,
    async stop(): Promise<Sent[]> {
      stopped = true;
      await Promise.all(loops);
      return sent;
    },
  };
}

/** Counts of each answer, for the figures a test prints. */
export function tally(list: readonly Sent[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of list) out[s.answer] = (out[s.answer] ?? 0) + 1;
  return out;
}
