import type { ClientHttp2Session } from 'node:http2';
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
