import http from 'node:http';
import { Writable } from 'node:stream';
import { Pool } from 'undici';

/**
 * The floor issue 14 names: a bare undici proxy in ~15 lines (`Pool.stream`, hop-by-hop headers
 * stripped, bodies streamed), no auth, no log, no metrics. `node bare-undici.js UPSTREAM_PORT`
 */
const pool = new Pool(`http://127.0.0.1:${process.argv[2] ?? '0'}`, { connections: 256, pipelining: 1 });
const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'expect', 'host']);
const strip = (h: http.IncomingHttpHeaders) =>
  Object.fromEntries(Object.entries(h).filter(([k, v]) => v !== undefined && !HOP.has(k))) as Record<
    string,
    string
  >;
const server = http.createServer((req, res) => {
  const hasBody =
    req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
  pool
    .stream(
      {
        path: req.url ?? '/',
        method: req.method as 'GET',
        headers: strip(req.headers),
        body: hasBody ? req : null,
      },
      ({ statusCode, headers }) => {
        res.writeHead(statusCode, strip(headers));
        return new Writable({
          write: (chunk, _e, cb) => void res.write(chunk, cb),
          final: (cb) => void res.end(cb),
        });
      },
    )
    .catch(() => (res.headersSent ? res.destroy() : res.writeHead(502).end()));
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${typeof address === 'object' && address ? address.port : 0}\n`);
});
