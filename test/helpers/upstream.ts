import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

export interface RecordingUpstream {
  readonly url: string;
  readonly port: number;
  readonly received: Received[];
  /** Every request whose headers arrived, body or not: what the gateway let through at all. */
  readonly arrived: Array<Omit<Received, 'body'>>;
  /** Replace how the next requests are answered. */
  behave(handler: (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer) => void): void;
  /** Resolves when the next body bytes reach the upstream (before the body has ended). */
  nextBodyBytes(): Promise<void>;
  close(): Promise<void>;
}

/** A real upstream on 127.0.0.1 that records every request it receives, body included. */
export async function startRecordingUpstream(): Promise<RecordingUpstream> {
  const received: Received[] = [];
  const arrived: Array<Omit<Received, 'body'>> = [];
  let bodyWaiters: Array<() => void> = [];
  let handler = (_req: http.IncomingMessage, res: http.ServerResponse, body: Buffer) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    res.end(body.length > 0 ? body : 'ok');
  };
  const server = http.createServer((req, res) => {
    arrived.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => {
      chunks.push(c);
      const waiting = bodyWaiters;
      bodyWaiters = [];
      for (const w of waiting) w();
    });
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      handler(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    received,
    arrived,
    behave(next) {
      handler = next;
    },
    nextBodyBytes: () => new Promise<void>((resolve) => bodyWaiters.push(resolve)),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
