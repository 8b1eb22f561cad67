import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ask } from '../helpers/client.js';
import { writeConfig } from '../helpers/fixture.js';
import { type Served, serve } from '../helpers/process.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

/**
 * `origin_ips: []` is a list all the same (CONTRACT §3.1: configured, so enforced): it admits no
 * address. It used to be built as a list holding one empty range, which threw on the key's first
 * request (500) instead of refusing it.
 */
const KEYS = `keys:
  - { name: nowhere, key: "sk_nowhere_test_000000000001", access_type: WRITE, signing_secret: "nowhere-secret-0000000000001", origin_ips: [] }
  - { name: anywhere, key: "sk_anywhere_test_00000000002", access_type: WRITE, signing_secret: "anywhere-secret-000000000002" }
`;

let upstream: RecordingUpstream;
let served: Served;
beforeAll(async () => {
  upstream = await startRecordingUpstream();
  served = await serve(writeConfig({ upstream: upstream.url, keys: KEYS }));
});
afterAll(async () => {
  await served?.stop();
  await upstream?.close();
});

describe('a key with an empty origin_ips', () => {
  it('is refused from every address with 403 origin_not_allowed, and reaches no upstream', async () => {
    for (let i = 0; i < 2; i++) {
      const r = await ask(served.apiPort, {
        path: '/api/v2/merchant/orders',
        headers: { 'x-apikey': 'sk_nowhere_test_000000000001', 'x-source': 'web' },
      });
      expect([r.status, r.json().code]).toEqual([403, 'origin_not_allowed']);
    }
    expect(upstream.received).toHaveLength(0);
    const other = await ask(served.apiPort, {
      path: '/api/v2/merchant/orders',
      headers: { 'x-apikey': 'sk_anywhere_test_00000000002', 'x-source': 'web' },
    });
    expect(other.status).toBe(200);
  });
});
