import http, { type IncomingHttpHeaders } from 'node:http';

export interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  readonly text: string;
  json<T = Record<string, unknown>>(): T;
}

export interface Ask {
  readonly method?: string;
  readonly path: string;
  readonly headers?: Record<string, string | string[]>;
  readonly body?: Buffer | string;
  readonly host?: string;
  readonly localAddress?: string;
  readonly agent?: http.Agent | false;
}

/** A real HTTP/1.1 client that sends the path byte for byte (fetch would normalise it). */
export function ask(port: number, q: Ask): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: q.host ?? '127.0.0.1',
        port,
        method: q.method ?? 'GET',
        path: q.path,
        // A body always goes with its length: Node sends DELETE bodies unframed otherwise.
        headers:
          q.body === undefined
            ? q.headers
            : { 'content-length': String(Buffer.byteLength(q.body)), ...q.headers },
        agent: q.agent ?? false,
        localAddress: q.localAddress,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const body = Buffer.concat(chunks);
          const text = body.toString('utf8');
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body,
            text,
            json: <T>() => JSON.parse(text) as T,
          });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(q.body);
  });
}

/** The admin listener's `/metrics` at `port`, each sample line as series (name and labels) → value. */
export async function scrape(port: number): Promise<Map<string, number>> {
  const text = (await ask(port, { path: '/metrics' })).text;
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}
