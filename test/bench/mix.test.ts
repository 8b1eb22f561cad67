import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SECRET, STOREFRONT_KEY, writeBenchConfig } from '../../bench/fixture.js';
import { mixedRequests, recordedClients } from '../../bench/mix/mix.js';
import { signLeadToken } from '../../src/client/index.js';
import { startTestGateway } from '../helpers/gateway.js';
import { raw, responses } from '../helpers/raw.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

/**
 * The mixed-traffic load (BENCH_MIX=1) replays bench/mix/clients.json: it is worth a figure only if
 * the recorded clients differ and every request it sends passes the token path, as the fixed one does.
 */
describe('the mixed-traffic load', () => {
  const recorded = recordedClients();
  let upstream: RecordingUpstream;
  let gateway: Awaited<ReturnType<typeof startTestGateway>>;
  beforeAll(async () => {
    upstream = await startRecordingUpstream();
    gateway = await startTestGateway(writeBenchConfig({ upstreamPort: upstream.port, engine: 'undici' }));
  });
  afterAll(async () => {
    await gateway.close();
    await upstream.close();
  });

  it('holds at least five clients, each with its own header names and order', () => {
    expect(recorded.clients.length).toBeGreaterThanOrEqual(5);
    const orders = new Set(recorded.clients.map((c) => c.headers.map(([name]) => name).join(',')));
    expect(orders.size).toBe(recorded.clients.length);
  });

  it('is answered 200 by the token path for every client, on one kept-alive connection', async () => {
    const port = gateway.apiPort;
    const host = `127.0.0.1:${port}`;
    const requests = mixedRequests(recorded, {
      host,
      apikey: STOREFRONT_KEY,
      token: signLeadToken(SECRET, 'lead-1'),
    });
    const before = upstream.received.length;
    const out = await raw(port, requests, {
      until: (text) => responses(text).length === requests.length,
    });
    const statuses = responses(out.text).map((r) => r.status);
    expect(statuses).toEqual(requests.map(() => 200));
    expect(out.closed).toBe(false);
    expect(upstream.received.length - before).toBe(requests.length);
  });
});
