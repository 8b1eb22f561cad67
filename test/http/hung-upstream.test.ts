import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitUntil } from '../../src/util/wait.js';
import { ask } from '../helpers/client.js';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';

/** An upstream that accepts and never answers: it counts the sockets it accepted and those closed. */
async function startHungUpstream() {
  const sockets: net.Socket[] = [];
  let closed = 0;
  const server = net.createServer((socket) => {
    sockets.push(socket);
    socket.resume(); // reads the request, never answers
    socket.on('error', () => {});
    socket.on('close', () => {
      closed++;
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    accepted: () => sockets.length,
    open: () => sockets.length - closed,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

const server = { 'x-apikey': KEYS.server.key, 'x-source': 'web' };
/**
 * undici closes a connection it keeps idle after 4 s (the pool's keep-alive time): a socket still
 * open well before that was held by the gateway, not left to expire. The CONTRACT's bound is 100 ms;
 * the wait here is longer only so that a busy test machine does not fail it.
 */
const SETTLE_MS = 1500;

describe.each(['undici', 'http-proxy'] as const)('a hung upstream, engine %s (CONTRACT §9)', (engine) => {
  let upstream: Awaited<ReturnType<typeof startHungUpstream>>;
  let gw: Awaited<ReturnType<typeof startTestGateway>>;

  beforeAll(async () => {
    upstream = await startHungUpstream();
    gw = await startTestGateway(writeConfig({ upstream: upstream.url, timeoutMs: 1000, engine }));
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  it('opens one upstream connection per request and closes each once answered 504', async () => {
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => ask(gw.apiPort, { path: '/api/v2/merchant/orders', headers: server })),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(50).fill(504));
    expect(await waitUntil(() => upstream.open() === 0, SETTLE_MS)).toBe(true);
    expect(upstream.accepted()).toBe(50);
    // The next step: one more request, one more connection, closed too; none was opened meanwhile.
    const next = await ask(gw.apiPort, { path: '/api/v2/merchant/orders', headers: server });
    expect(next.status).toBe(504);
    expect(await waitUntil(() => upstream.open() === 0, SETTLE_MS)).toBe(true);
    expect(upstream.accepted()).toBe(51);
  }, 20_000);

  it('closes the upstream connection of a client that hangs up while waiting', async () => {
    const before = upstream.accepted();
    const client = net.connect(gw.apiPort, '127.0.0.1');
    client.on('error', () => {});
    client.write(
      `GET /api/v2/merchant/orders HTTP/1.1\r\nhost: x\r\nx-apikey: ${server['x-apikey']}\r\nx-source: web\r\n\r\n`,
    );
    expect(await waitUntil(() => upstream.accepted() === before + 1, 5000)).toBe(true);
    client.destroy();
    expect(await waitUntil(() => upstream.open() === 0, SETTLE_MS)).toBe(true);
    expect(upstream.accepted()).toBe(before + 1);
  }, 20_000);
});
