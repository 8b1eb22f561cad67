import { Writable } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createLogger, sinkOf } from '../../src/observability/log.js';
import { formatRequestLine, type RequestLine } from '../../src/observability/request-log.js';

/** The line pino writes for the same facts, through the same logger setup the gateway uses. */
function pinoLine(level: 'info' | 'error', line: RequestLine): string {
  let out = '';
  const logger = createLogger({
    level: 'info',
    flushMs: 0,
    destination: new Writable({
      write(chunk, _enc, done) {
        out += chunk.toString();
        done();
      },
    }),
  });
  logger[level](
    {
      request_id: line.requestId,
      method: line.method,
      path: line.path,
      status: line.status,
      key_name: line.keyName,
      code: line.code,
      duration_ms: line.durationMs,
      upstream_ms: line.upstreamMs,
    },
    'request',
  );
  sinkOf(logger).flush();
  return out;
}

const withoutTime = (text: string) => text.replace(/"time":"[^"]*"/, '"time":""');

describe('request log line', () => {
  it('is byte for byte the line pino writes, escaping included', () => {
    const arbLine = fc.record({
      requestId: fc.uuid(),
      method: fc.option(fc.constantFrom('GET', 'POST', 'DELETE'), { nil: undefined }),
      path: fc.option(fc.string({ unit: 'binary' }), { nil: undefined }),
      status: fc.integer({ min: 100, max: 599 }),
      keyName: fc.option(fc.string(), { nil: undefined }),
      code: fc.string(),
      durationMs: fc.option(fc.double({ min: 0, max: 1e6, noNaN: true }), { nil: undefined }),
      upstreamMs: fc.option(fc.double({ min: 0, max: 1e6, noNaN: true }), { nil: undefined }),
    });
    fc.assert(
      fc.property(arbLine, (line) => {
        const level = line.status >= 500 ? 'error' : 'info';
        expect(withoutTime(formatRequestLine(level, line, Date.now()))).toBe(
          withoutTime(pinoLine(level, line)),
        );
      }),
      { numRuns: 300 },
    );
  });

  const plain: RequestLine = {
    requestId: 'r',
    method: 'GET',
    path: '/',
    status: 200,
    keyName: 'k',
    code: 'ok',
    durationMs: 1,
    upstreamMs: undefined,
  };

  it('carries the time as pino does (ISO 8601, UTC)', () => {
    const line = formatRequestLine('info', plain, Date.UTC(2026, 10, 23, 12, 0, 0, 5));
    expect(JSON.parse(line)).toMatchObject({
      time: '2026-11-23T12:00:00.005Z',
      level: 'info',
      msg: 'request',
    });
  });

  it('gives each millisecond its own time, however many lines share one', () => {
    const at = (ms: number) => (JSON.parse(formatRequestLine('info', plain, ms)) as { time: string }).time;
    const t = Date.UTC(2026, 10, 25, 8, 0, 0, 0);
    expect([at(t), at(t), at(t + 1), at(t), at(t + 1000)]).toEqual([
      '2026-11-25T08:00:00.000Z',
      '2026-11-25T08:00:00.000Z',
      '2026-11-25T08:00:00.001Z',
      '2026-11-25T08:00:00.000Z',
      '2026-11-25T08:00:01.000Z',
    ]);
  });
});
