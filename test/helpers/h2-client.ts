import type { ClientHttp2Session, ClientHttp2Stream } from 'node:http2';
import { KEYS } from './fixture.js';

/** One GET on an h2 session with the server key (READ, SERVER): its `:status`, once the answer ended. */
export function h2Status(session: ClientHttp2Session, path: string): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const stream = session.request({ ':path': path, 'x-apikey': KEYS.server.key, 'x-source': 'web' });
    let status = 0;
    stream.on('response', (h) => {
      status = Number(h[':status']);
    });
    stream.on('error', reject);
    stream.resume();
    stream.on('end', () => resolve(status));
  });
}

/** A stream's answer: its `:status` and body once it ends, or status -1 (and the body so far) when it errors. */
export function h2Answer(stream: ClientHttp2Stream): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    let status = 0;
    let body = '';
    stream.on('response', (h) => {
      status = Number(h[':status']);
    });
    stream.on('data', (c: Buffer) => {
      body += c.toString();
    });
    stream.on('end', () => resolve({ status, body }));
    stream.on('error', () => resolve({ status: -1, body }));
  });
}
