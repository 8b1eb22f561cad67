import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Dispatcher } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Pool } from '../../src/http/undici-pool.js';

/**
 * What src/http/forward-undici.ts relies on in undici when a client leaves or an answer is late:
 * `controller.abort()` of a request already written closes its connection and drops the request.
 * undici 7 put the aborted request back in its queue and opened a second connection for it
 * (nodejs/undici#5845), so the forwarder used to close the socket itself first, learning it from
 * `undici:client:sendHeaders`. undici 8 does not: the forwarder only aborts. This test fails
 * (2 connections) on undici 7.30.2; should it fail after an upgrade, the workaround is needed
 * again (git history of forward-undici.ts, `release`). The test learns the socket the same way,
 * to wait for its close.
 */
let server: http.Server;
let origin = '';
/** The client port of each connection the upstream accepted, and per path the port it came on. */
const connections: number[] = [];
const portOf = new Map<string, number>();

beforeAll(async () => {
  server = http.createServer((req, res) => {
    portOf.set(req.url ?? '', req.socket.remotePort ?? 0);
    if (req.url?.startsWith('/hold')) return; // never answered
    res.end('ok');
  });
  server.on('connection', (socket: Socket) => {
    connections.push(socket.remotePort ?? 0);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

class Probe implements Dispatcher.DispatchHandler {
  controller: Dispatcher.DispatchController | null = null;
  socket: Socket | null = null;
  readonly done: Promise<string>;
  private settle: (outcome: string) => void = () => {};
  constructor() {
    this.done = new Promise((r) => {
      this.settle = r;
    });
  }
  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    writing = this;
  }
  onResponseStart(): void {}
  onResponseData(): void {}
  onResponseEnd(): void {
    this.settle('end');
  }
  onResponseError(_c: Dispatcher.DispatchController, err: Error): void {
    if (writing === this) writing = null;
    this.settle(`error ${(err as NodeJS.ErrnoException).code ?? err.name}`);
  }
}

let writing: Probe | null = null;
const onSendHeaders = (message: unknown) => {
  const probe = writing;
  writing = null;
  if (probe !== null) probe.socket = (message as { socket: Socket }).socket;
};

describe('an upstream request the undici forwarder aborts', () => {
  beforeAll(() => subscribe('undici:client:sendHeaders', onSendHeaders));
  afterAll(() => unsubscribe('undici:client:sendHeaders', onSendHeaders));

  it('an aborted written request is dropped with its connection, not queued again (nodejs/undici#5845)', async () => {
    const pool = new Pool(origin, { connections: 1, pipelining: 1 });
    try {
      const before = connections.length;
      const probe = new Probe();
      pool.dispatch({ path: '/hold-5845', method: 'GET' }, probe);
      while (!portOf.has('/hold-5845')) await new Promise((r) => setTimeout(r, 5));
      const socket = probe.socket;
      expect(socket).not.toBeNull();
      const closed = new Promise((r) => socket?.once('close', r));
      probe.controller?.abort(new Error('client gone'));
      expect(await probe.done).toBe('error Error'); // our reason, as given
      await closed;
      await new Promise((r) => setImmediate(r));
      // undici 7 put the aborted request back in its queue and opened a second connection for it;
      // undici 8 drops it: nothing pending, nothing queued, no connection but the first.
      const { pending, queued, running } = pool.stats;
      expect({ pending, queued, running }).toEqual({ pending: 0, queued: 0, running: 0 });
      expect(connections.length - before).toBe(1);
    } finally {
      await pool.destroy();
    }
  });
});
