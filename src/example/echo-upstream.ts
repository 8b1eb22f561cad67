import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A tiny backend for the example and the tests: answers every request with JSON describing
 * what it received (method, url, the gateway's identity headers, body size). Rejects when it
 * cannot listen (the port is taken).
 */
export function startEchoUpstream(port = 3000, host = '127.0.0.1'): Promise<http.Server & { port: number }> {
  const server = http.createServer((req, res) => {
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
    });
    req.on('end', () => {
      const body = JSON.stringify({
        method: req.method,
        url: req.url,
        lead_id: req.headers['x-lead-id'] ?? null,
        key_name: req.headers['x-api-key-name'] ?? null,
        key_access: req.headers['x-api-key-access'] ?? null,
        key_purpose: req.headers['x-api-key-purpose'] ?? null,
        request_id: req.headers['x-request-id'] ?? null,
        forwarded_for: req.headers['x-forwarded-for'] ?? null,
        body_bytes: size,
      });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(Object.assign(server, { port: (server.address() as AddressInfo).port }));
    });
  });
}
