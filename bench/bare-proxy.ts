import http from 'node:http';
import { createHttpProxyForwarder } from '../src/http/forward-http-proxy.js';
import { createUndiciForwarder } from '../src/http/forward-undici.js';

/**
 * A proxy with no auth at all, on one of leadgate's forwarding engines: the floor leadgate is
 * measured against. `node bare-proxy.js ENGINE UPSTREAM_PORT`
 */
const [engine = 'undici', upstreamPort = '0'] = process.argv.slice(2);
const target = new URL(`http://127.0.0.1:${upstreamPort}`);
const forwarder =
  engine === 'undici'
    ? createUndiciForwarder({ connections: 256, connectTimeoutMs: 5000 })
    : createHttpProxyForwarder(new http.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 256 }));
const server = http.createServer((req, res) => {
  const handle = forwarder.forward({
    req,
    res,
    target,
    headers: { ...req.headers },
    // The request streamed as it comes: no buffering, coalescing or rate (what a bare proxy does).
    body:
      req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined
        ? req
        : null,
    timeoutMs: 30_000,
    sendTimeoutMs: 60_000,
    responseHeaders: {},
    onUpstreamResponse() {},
    onSendTimeout() {},
    onError(error) {
      res.writeHead(error.status).end();
    },
  });
  res.on('close', () => handle.closed());
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${typeof address === 'object' && address ? address.port : 0}\n`);
});
