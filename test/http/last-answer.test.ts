import { readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { type Served, serve } from '../helpers/process.js';
import { raw, request, responses } from '../helpers/raw.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

/**
 * Nothing after the last answer (RFC 9112 §9.6, CONTRACT §10): once an answer carries
 * `Connection: close`, a request pipelined behind it is not forwarded, answered or charged.
 * Raw sockets against a real leadgate process and a real upstream.
 */
const HOST = ['Host', '127.0.0.1'] as const;
const reader = [HOST, ['x-apikey', KEYS.server.key], ['x-source', 'web']] as const;
const writer = [HOST, ['x-apikey', KEYS.write.key], ['x-source', 'web']] as const;
const get = (tag: string, more: ReadonlyArray<readonly [string, string]> = []) =>
  request(`GET /api/v2/merchant/orders?tag=${tag} HTTP/1.1`, [...reader, ...more]);
const post = (tag: string) =>
  request(
    `POST /api/v2/merchant/actions?tag=${tag} HTTP/1.1`,
    [...writer, ['Content-Type', 'text/plain'], ['Content-Length', '5']],
    'write',
  );

let upstream: RecordingUpstream;
const reached = (tag: string) => upstream.arrived.filter((r) => r.url.endsWith(`tag=${tag}`)).length;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
});
afterAll(async () => upstream.close());

function withShutdown(extra: string, shutdown: string): string {
  const path = writeConfig({ upstream: upstream.url, extra });
  writeFileSync(path, readFileSync(path, 'utf8').replace('shutdown: { delay_s: 0, timeout_s: 2 }', shutdown));
  return path;
}

describe('nothing after the last answer', () => {
  let s: Served;
  beforeAll(async () => {
    s = await serve(withShutdown('limits: { max_body_bytes: 10 }', 'shutdown: { delay_s: 0, timeout_s: 2 }'));
  });
  afterAll(async () => s.stop());

  it('a write pipelined behind a request that asks to close never reaches the upstream', async () => {
    const r = await raw(s.apiPort, [get('ask1', [['Connection', 'close']]) + post('ask2')]);
    const answers = responses(r.text);
    expect(r.closed).toBe(true);
    expect(answers.map((a) => [a.status, a.headers.connection])).toEqual([[200, 'close']]);
    expect([reached('ask1'), reached('ask2')]).toEqual([1, 0]);
  });

  it('an HTTP/1.0 request without keep-alive is the last one too', async () => {
    const first = `GET /api/v2/merchant/orders?tag=old1 HTTP/1.0\r\nx-apikey: ${KEYS.server.key}\r\nx-source: web\r\n\r\n`;
    const r = await raw(s.apiPort, [first + post('old2')]);
    expect(responses(r.text).map((a) => a.status)).toEqual([200]);
    expect([reached('old1'), reached('old2')]).toEqual([1, 0]);
  });

  it('a write pipelined behind a refusal that leaves its body unread is neither forwarded nor answered', async () => {
    const big = request(
      'POST /api/v2/merchant/actions?tag=big HTTP/1.1',
      [...writer, ['Content-Length', '20']],
      'x'.repeat(20),
    );
    const r = await raw(s.apiPort, [big + post('behind-big')]);
    const answers = responses(r.text);
    expect(answers.map((a) => [a.status, a.headers.connection])).toEqual([[413, 'close']]);
    expect([reached('big'), reached('behind-big')]).toEqual([0, 0]);
  });

  it('pipelined requests on a kept-alive connection are all served, in order', async () => {
    const r = await raw(s.apiPort, [get('ka1') + post('ka2') + get('ka3')], {
      until: (t) => responses(t).length === 3,
    });
    expect(responses(r.text).map((a) => a.status)).toEqual([200, 200, 200]);
    expect([reached('ka1'), reached('ka2'), reached('ka3')]).toEqual([1, 1, 1]);
  });
});

/**
 * A kept-alive connection that sends a GET and a write pipelined, again and again, through a
 * drain: what it is answered and what the upstream saw, per pair.
 */
function pairsThroughDrain(port: number, conn: number) {
  return new Promise<{ sent: string[]; answered: number; closes: number }>((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const sent: string[] = [];
    let text = '';
    let seen = 0;
    let closes = 0;
    const next = () => {
      const tag = `d${conn}-${sent.length}`;
      sent.push(`${tag}a`, `${tag}b`);
      socket.write(get(`${tag}a`) + post(`${tag}b`));
    };
    socket.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      const got = responses(text);
      for (const a of got.slice(seen)) if (a.headers.connection === 'close') closes++;
      seen = got.length;
      if (seen === sent.length) setTimeout(() => !socket.destroyed && next(), 20);
    });
    socket.on('connect', next);
    const done = () => resolve({ sent, answered: responses(text).length, closes });
    socket.on('close', done);
    socket.on('error', () => {});
  });
}

describe('through a drain', () => {
  it('every request the upstream saw was answered, and nothing behind a closing answer reached it', async () => {
    upstream.behave((_req, res) => setTimeout(() => res.end('ok'), 10));
    const s = await serve(withShutdown('', 'shutdown: { delay_s: 1, timeout_s: 3 }'));
    const conns = Array.from({ length: 4 }, (_, i) => pairsThroughDrain(s.apiPort, i));
    await new Promise((r) => setTimeout(r, 300));
    s.child.kill('SIGTERM');
    const results = await Promise.all(conns);
    expect(await s.exited).toBe(0);
    upstream.behave((_req, res, body) => res.end(body.length > 0 ? body : 'ok'));
    for (const { sent, answered, closes } of results) {
      const served = sent.filter((tag) => reached(tag) > 0).length;
      // the connection ended on a closing answer, and each request forwarded got its answer
      expect(closes).toBe(1);
      expect(served).toBe(answered);
      expect(sent.slice(0, served).every((tag) => reached(tag) === 1)).toBe(true);
      expect(sent.slice(served).every((tag) => reached(tag) === 0)).toBe(true);
    }
  });

  it('keeps connections open in the first half of shutdown.delay_s, closes them by its end', async () => {
    const s = await serve(withShutdown('', 'shutdown: { delay_s: 6, timeout_s: 2 }'));
    const socket = net.connect(s.apiPort, '127.0.0.1');
    let text = '';
    socket.on('data', (d: Buffer) => {
      text += d.toString('latin1');
    });
    const closed = new Promise<void>((r) => socket.on('close', () => r()));
    const answer = async (n: number) => {
      socket.write(get(`half${n}`));
      while (responses(text).length < n) await new Promise((r) => setTimeout(r, 10));
      return responses(text)[n - 1];
    };
    expect((await answer(1))?.headers.connection).toBe('keep-alive');
    s.child.kill('SIGTERM');
    await s.waitFor((l) => l.msg === 'shutting down');
    expect((await answer(2))?.headers.connection).toBe('keep-alive');
    await closed;
    expect(await s.exited).toBe(0);
  });
});

describe('a start that cannot bind a listener', () => {
  it.each([1, 2])('exits non-zero with one log line and serves nothing (workers: %i)', async (workers) => {
    const blocker = net.createServer().listen(0, '127.0.0.1');
    await new Promise((r) => blocker.once('listening', r));
    const taken = (blocker.address() as net.AddressInfo).port;
    const api = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as net.AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    const path = writeConfig({ upstream: upstream.url, extra: `workers: ${workers}` });
    writeFileSync(
      path,
      readFileSync(path, 'utf8')
        .replace('listen: { host: 127.0.0.1, port: 0 }', `listen: { host: 127.0.0.1, port: ${api} }`)
        .replace('admin: { host: 127.0.0.1, port: 0 }', `admin: { host: 127.0.0.1, port: ${taken} }`),
    );
    const { spawn } = await import('node:child_process');
    const { BIN } = await import('../helpers/process.js');
    const child = spawn(process.execPath, [BIN, 'serve', '--config', path], {
      env: { PATH: process.env.PATH },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
    });
    const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
    blocker.close();
    expect(code).toBe(1);
    const lines = out
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { msg: string; level: number });
    expect(lines.filter((l) => l.msg === 'cannot start')).toHaveLength(1);
    expect(lines.some((l) => l.msg === 'leadgate ready')).toBe(false);
    const refused = await new Promise<boolean>((resolve) => {
      const c = net.connect(api, '127.0.0.1');
      c.on('connect', () => resolve(c.destroy() === undefined && false));
      c.on('error', () => resolve(true));
    });
    expect(refused).toBe(true);
  });
});

describe('a client that asks to close, on the http-proxy engine', () => {
  let s: Served;
  beforeAll(async () => {
    s = await serve(writeConfig({ upstream: upstream.url, engine: 'http-proxy' }));
  });
  afterAll(async () => s.stop());

  it('gets Connection: close and the connection ends, nothing behind it forwarded', async () => {
    const r = await raw(s.apiPort, [get('hp1', [['Connection', 'close']]) + post('hp2')]);
    const answers = responses(r.text);
    expect(r.closed).toBe(true);
    expect(answers.map((a) => [a.status, a.headers.connection])).toEqual([[200, 'close']]);
    expect([reached('hp1'), reached('hp2')]).toEqual([1, 0]);
  });
});
