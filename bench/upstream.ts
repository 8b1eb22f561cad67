import http from 'node:http';

/** The fixed upstream every target proxies to: a ~100-byte JSON answer. `node upstream.js PORT` */
const body = JSON.stringify({ ok: true, orders: [{ id: 'o-1', total: 4200, currency: 'EUR' }], page: 1 });
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${typeof address === 'object' && address ? address.port : 0}\n`);
});
