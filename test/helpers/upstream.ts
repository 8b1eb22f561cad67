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
  /** Replace how the next requests are answered. */
  behave(handler: (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer) => void): void;
  close(): Promise<void>;
}

/** A real upstream on 127.0.0.1 that records every request it receives, body included. */
export async function startRecordingUpstream(): Promise<RecordingUpstream> {
  const received: Received[] = [];
  let handler = (_req: http.IncomingMessage, res: http.ServerResponse, body: Buffer) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    res.end(body.length > 0 ? body : 'ok');
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
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
    behave(next) {
      handler = next;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
