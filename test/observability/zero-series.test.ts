import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ask } from '../helpers/client.js';
import { writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { serve } from '../helpers/process.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

/**
 * CONTRACT §9: every labelled counter whose label values the config decides is exported at 0 from
 * the first scrape, so an alert on rate() or increase() sees the first event.
 */
let upstream: RecordingUpstream;
beforeAll(async () => {
  upstream = await startRecordingUpstream();
});
afterAll(() => upstream.close());

const POLICIES = `rate_limits:
  policies:
    - { name: per-key, by: key, limit: 100, window_s: 60 }
    - { name: storefront-ip, by: client_ip, limit: 10, window_s: 60, keys: [storefront] }`;
const KEY_NAMES = ['storefront', 'server', 'writer', 'fenced'];
const expected = (keys: readonly string[]) => [
  ...keys.map((key) => `leadgate_rate_limited_total{policy="per-key",key="${key}"} 0`),
  'leadgate_rate_limited_total{policy="storefront-ip",key="storefront"} 0',
  ...['found', 'not_found', 'refused', 'error'].map((r) => `leadgate_lookups_total{result="${r}"} 0`),
];
const series = (text: string) =>
  text.split('\n').filter((l) => /^leadgate_(rate_limited|lookups)_total\{/.test(l));

describe('counters at 0 from the first scrape', () => {
  it('has every policy × key it applies to, and every lookup result; a reload adds the new ones', async () => {
    const path = writeConfig({ upstream: upstream.url, extra: POLICIES });
    const gw = await startTestGateway(path);
    try {
      const first = series((await ask(gw.adminPort, { path: '/metrics' })).text);
      expect(first.sort()).toEqual(expected(KEY_NAMES).sort());
      writeFileSync(
        path,
        `${readFileSync(path, 'utf8')}  - { name: fresh, key: "sk_fresh_0123456789abcdef", access_type: WRITE, signing_secret: "0123456789abcdef0123456789abcdef" }\n`,
      );
      expect(await gw.reload('file')).toBe('ok');
      const after = series((await ask(gw.adminPort, { path: '/metrics' })).text);
      expect(after.sort()).toEqual(expected([...KEY_NAMES, 'fresh']).sort());
    } finally {
      await gw.close();
    }
  });

  it('in a worker pool too: the primary sums every worker’s zeros into one series each', async () => {
    const startedS = Date.now() / 1000;
    const s = await serve(writeConfig({ upstream: upstream.url, extra: `workers: 2\n${POLICIES}` }));
    try {
      const text = (await ask(s.adminPort, { path: '/metrics' })).text;
      expect(series(text).sort()).toEqual(expected(KEY_NAMES).sort());
      // the pod's memory store began with the primary, before the workers: every worker says so
      const epochS = Number(/^leadgate_state_store_epoch_seconds (\S+)/m.exec(text)?.[1]);
      expect(epochS).toBeGreaterThan(startedS - 1);
      expect(epochS).toBeLessThanOrEqual(Date.now() / 1000);
    } finally {
      await s.stop();
    }
  });
});
