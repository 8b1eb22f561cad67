import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { Writable } from 'node:stream';
import pino from 'pino';
import { Pool } from 'undici';

/**
 * The floor issue 14 names: a bare undici proxy in ~15 lines (`Pool.stream`, hop-by-hop headers
 * stripped, bodies streamed), no auth, no log, no metrics. With `log`, it also writes one pino
 * line per request and one header each way (x-request-id): the least any gateway that logs
 * does. `node bare-undici.js [log] UPSTREAM_PORT`
 */
const port = process.argv.at(-1) ?? '0';
const pool = new Pool(`http://127.0.0.1:${port}`, { connections: 256, pipelining: 1 });
const logger = process.argv.includes('log') ? pino(pino.destination({ dest: 1, sync: false })) : null;
const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'expect', 'host']);
const strip = (h: http.IncomingHttpHeaders) =>
  Object.fromEntries(Object.entries(h).filter(([k, v]) => v !== undefined && !HOP.has(k))) as Record<
    string,
    string
  >;
const server = http.createServer((req, res) => {
  const id = logger === null ? null : randomUUID();
  const headers = strip(req.headers);
  if (id !== null) headers['x-request-id'] = id;
  const hasBody =
    req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
  pool
    .stream(
      { path: req.url ?? '/', method: req.method as 'GET', headers, body: hasBody ? req : null },
      ({ statusCode, headers }) => {
        res.writeHead(statusCode, id === null ? strip(headers) : { ...strip(headers), 'x-request-id': id });
        return new Writable({
          write: (chunk, _e, cb) => void res.write(chunk, cb),
          final: (cb) => void res.end(cb),
        });
      },
    )
    .catch(() => (res.headersSent ? res.destroy() : res.writeHead(502).end()))
    .finally(() =>
      logger?.info({ request_id: id, method: req.method, path: req.url, status: res.statusCode }),
    );
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${typeof address === 'object' && address ? address.port : 0}\n`);
});
