import { describe, expect, it } from 'vitest';
import { LogSink } from '../../src/observability/log-sink.js';

const recorder = () => {
  const writes: string[] = [];
  return { writes, out: { write: (text: string) => writes.push(text) } };
};

describe('log sink', () => {
  it('writes pino lines at once, after the request lines that wait', () => {
    const { writes, out } = recorder();
    const sink = new LogSink(out, { flushMs: 10_000, batchChars: 1 << 20 });
    sink.batch('a\n');
    sink.batch('b\n');
    expect(writes).toEqual([]);
    sink.write('ready\n');
    expect(writes).toEqual(['a\nb\nready\n']);
  });

  it('writes request lines in one write per batch, when the batch is full', () => {
    const { writes, out } = recorder();
    const sink = new LogSink(out, { flushMs: 10_000, batchChars: 10 });
    for (let i = 0; i < 9; i++) sink.batch('1234\n');
    expect(writes).toEqual(['1234\n1234\n', '1234\n1234\n', '1234\n1234\n', '1234\n1234\n']);
    sink.flush();
    expect(writes.at(-1)).toBe('1234\n');
  });

  it('writes what waits after flushMs, with no more traffic', async () => {
    const { writes, out } = recorder();
    const sink = new LogSink(out, { flushMs: 20, batchChars: 1 << 20 });
    sink.batch('late\n');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(writes).toEqual(['late\n']);
  });

  it('writes each line at once with flushMs 0', () => {
    const { writes, out } = recorder();
    const sink = new LogSink(out, { flushMs: 0, batchChars: 1 << 20 });
    sink.batch('x\n');
    expect(writes).toEqual(['x\n']);
  });

  it('counts the lines its destination drops', () => {
    let onDrop: (text: string) => void = () => {};
    const sink = new LogSink(
      {
        write: () => true,
        on: (_event: 'drop', listener: (text: string) => void) => {
          onDrop = listener;
        },
      },
      { flushMs: 0, batchChars: 1 },
    );
    onDrop('a\nb\nc\n');
    expect(sink.dropped).toBe(3);
  });
});
