import { execFileSync } from 'node:child_process';
import { Pool as IndexPool } from 'undici';
import { describe, expect, it } from 'vitest';
import { Pool } from '../../src/http/undici-pool.js';

describe('undici Pool loaded alone', () => {
  it('is the Pool that undici exports', () => {
    expect(Pool).toBe(IndexPool);
  });

  it('dispatches on its own, without the index (a process that loads nothing else of undici)', () => {
    // This test file loads the index, which adds methods to every dispatcher: a fresh process does not.
    const script = `
      const http = require('node:http');
      const Pool = require('undici/lib/dispatcher/pool.js');
      const server = http.createServer((req, res) => res.end('ok ' + req.url));
      server.listen(0, '127.0.0.1', () => {
        const pool = new Pool('http://127.0.0.1:' + server.address().port);
        let body = '';
        pool.dispatch({ path: '/alone', method: 'GET' }, {
          onRequestStart() {},
          onResponseStart(_c, status) { body += status + ' '; },
          onResponseData(_c, chunk) { body += chunk; },
          onResponseEnd() {
            process.stdout.write(body + ' request:' + typeof pool.request);
            pool.destroy().then(() => server.close());
          },
          onResponseError(_c, err) { process.stdout.write('error ' + err.message); server.close(); },
        });
      });`;
    const out = execFileSync(process.execPath, ['-e', script], {
      cwd: new URL('../..', import.meta.url),
      encoding: 'utf8',
      timeout: 10_000,
    });
    expect(out).toBe('200 ok /alone request:undefined');
  });
});
