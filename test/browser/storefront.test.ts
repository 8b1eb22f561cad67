import { existsSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signLeadToken } from '../../src/client/index.js';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { requires } from '../helpers/optional.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

const CHROMIUM = '/usr/bin/chromium';
// CI installs chromium (.ci/run); there the test must run. Elsewhere it says why it did not.
const available = requires(
  'chromium',
  existsSync(CHROMIUM),
  `Debian: apt-get install chromium, for ${CHROMIUM}`,
);

/** A storefront page: its own backend put a lead token in it; it calls the gateway from the browser. */
function storefrontPage(gatewayUrl: string, token: string): string {
  return `<!doctype html><html><body><h1>Your orders</h1><pre id="out">loading</pre><script>
fetch(${JSON.stringify(`${gatewayUrl}/api/v2/merchant/orders`)}, {
  headers: { 'x-apikey': ${JSON.stringify(KEYS.storefront.key)}, 'x-source': 'web', 'x-leadtoken': ${JSON.stringify(token)} },
})
  .then(async (r) => {
    const body = await r.json();
    document.getElementById('out').textContent = r.ok ? 'lead ' + body.lead_id : 'error ' + body.code;
  })
  .catch((e) => { document.getElementById('out').textContent = 'blocked ' + e.name; });
</script></body></html>`;
}

async function startPageServer(page: () => string): Promise<{ origin: string; close(): void }> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(page());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => server.close(),
  };
}

describe.runIf(available)('a storefront in real Chromium', () => {
  let browser: Browser;
  let upstream: RecordingUpstream;
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  let token = '';
  let allowed: { origin: string; close(): void };
  let other: { origin: string; close(): void };

  beforeAll(async () => {
    upstream = await startRecordingUpstream();
    upstream.behave((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ lead_id: req.headers['x-lead-id'], orders: [] }));
    });
    allowed = await startPageServer(() => storefrontPage(`http://127.0.0.1:${gw.apiPort}`, token));
    other = await startPageServer(() => storefrontPage(`http://127.0.0.1:${gw.apiPort}`, token));
    gw = await startTestGateway(
      writeConfig({ upstream: upstream.url, extra: `cors: { origins: ["${allowed.origin}"] }` }),
    );
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    allowed?.close();
    other?.close();
    await gw?.close();
    await upstream?.close();
  });

  const show = async (origin: string) => {
    const page = await browser.newPage();
    try {
      await page.goto(origin);
      await page.waitForFunction(() => document.getElementById('out')?.textContent !== 'loading', undefined, {
        timeout: 10_000,
      });
      return await page.textContent('#out');
    } finally {
      await page.close();
    }
  };

  it('fetches lead data through the gateway from an allowed origin (preflight and all)', async () => {
    token = signLeadToken(KEYS.storefront.secret, 'lead-1');
    expect(await show(allowed.origin)).toBe('lead lead-1');
  });

  it('is blocked by the browser on an origin the gateway does not grant', async () => {
    token = signLeadToken(KEYS.storefront.secret, 'lead-1');
    expect(await show(other.origin)).toBe('blocked TypeError');
  });

  it("shows the gateway's error for an expired token", async () => {
    token = signLeadToken(KEYS.storefront.secret, 'lead-1', { now: Math.floor(Date.now() / 1000) - 7200 });
    expect(await show(allowed.origin)).toBe('error expired_lead_token');
  });
});
