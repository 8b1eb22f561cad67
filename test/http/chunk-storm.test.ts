import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { type Served, serve } from '../helpers/process.js';
import { raw, request, responses } from '../helpers/raw.js';

/**
 * Chunk storms cost what the bytes cost (issue 47, point 4): a 1 MiB body sent as 1-byte chunks
 * through a real leadgate reaches the backend in coalesced writes, and leadgate's CPU time for it
 * is printed beside a plain Node server's for the same bytes (a figure, not asserted: the machine
 * is shared).
 */
const MiB = 2 ** 20;
const storm = (() => {
  const one = '1\r\nx\r\n';
  return Buffer.from(`${one.repeat(MiB)}0\r\n\r\n`, 'latin1');
})();

/** CPU time (user + system) of a process so far, in ms (/proc/PID/stat, clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

const head = (path: string, key: string) =>
  request(`POST ${path} HTTP/1.1`, [
    ['Host', '127.0.0.1'],
    ['x-apikey', key],
    ['x-source', 'web'],
    ['Transfer-Encoding', 'chunked'],
  ]);

/** Backend: counts the body pieces its parser hands over and the bytes, answers with both. */
let backend: http.Server;
let pieces = 0;
let bytes = 0;
let s: Served;
beforeAll(async () => {
  backend = http.createServer((req, res) => {
    pieces = 0;
    bytes = 0;
    req.on('data', (c: Buffer) => {
      pieces++;
      bytes += c.length;
    });
    req.on('end', () => res.end(`${bytes}`));
  });
  await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(backend.address() as AddressInfo).port}`;
  s = await serve(writeConfig({ upstream: url }));
});
afterAll(async () => {
  await s.stop();
  await new Promise((r) => backend.close(r));
});

describe('a 1 MiB body in 1-byte chunks', () => {
  it('reaches the backend whole, in coalesced writes rather than 1,048,576 chunks', async () => {
    const r = await raw(s.apiPort, [head('/api/v2/merchant/actions', KEYS.write.key), storm], {
      waitMs: 30_000,
      until: (t) => t.endsWith(String(MiB)),
    });
    expect(responses(r.text)[0]?.status).toBe(200);
    expect(bytes).toBe(MiB);
    console.log(`backend received the 1 MiB storm in ${pieces} pieces`);
    // 64 KiB writes, or one per read of the client's bytes: a few hundred at most.
    expect(pieces).toBeLessThan(2_000);
  }, 60_000);

  it('costs leadgate about what a plain Node server pays to read it (figure printed)', async () => {
    const plain = spawn(
      process.execPath,
      [
        '-e',
        `require('node:http').createServer((q, s) => { let n = 0; q.on('data', (c) => (n += c.length)); q.on('end', () => s.end(String(n))); }).listen(0, '127.0.0.1', function () { console.log(this.address().port); });`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const port = await new Promise<number>((resolve) =>
      plain.stdout?.once('data', (d: Buffer) => resolve(Number(d.toString()))),
    );
    const pid = s.child.pid ?? 0;
    const rounds = 1;
    const measure = async (target: number, targetPid: number, path: string, key: string) => {
      const t0 = cpuMs(targetPid);
      for (let i = 0; i < rounds; i++) {
        const r = await raw(target, [head(path, key), storm], {
          waitMs: 30_000,
          until: (t) => t.endsWith(String(MiB)),
        });
        expect(responses(r.text)[0]?.status).toBe(200);
      }
      return (cpuMs(targetPid) - t0) / rounds;
    };
    const node = await measure(port, plain.pid ?? 0, '/', 'none');
    const gate = await measure(s.apiPort, pid, '/api/v2/merchant/actions', KEYS.write.key);
    plain.kill();
    console.log(
      `1 MiB in 1-byte chunks, CPU per request: plain Node ${node.toFixed(0)} ms, leadgate ${gate.toFixed(0)} ms (${(gate / Math.max(node, 1)).toFixed(2)}x)`,
    );
    expect(gate).toBeGreaterThan(0);
  }, 120_000);
});
