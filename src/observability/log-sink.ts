/** Where a sink's text goes: pino's async destination (sonic-boom on fd 1), or a test's stream. */
export interface LogOutput {
  write(text: string): unknown;
  flushSync?(): void;
  on?(event: 'drop', listener: (text: string) => void): unknown;
}

export interface LogSinkOptions {
  /** Request lines wait at most this long (ms) before they are written; 0 writes each at once. */
  readonly flushMs: number;
  /** …or until this many characters wait. */
  readonly batchChars: number;
}

/**
 * The one stream every log line goes through. pino's own lines (start, reload, errors) are
 * written at once, after anything waiting. Request lines are batched: one write per `batchChars`
 * or `flushMs`, not one per request. Each write to the async destination is a hand-off to
 * libuv's thread pool and a wake-up of the log reader; per request, that hand-off cost more CPU
 * than the rest of the line (measured, issue 14). Lines the destination drops because its
 * queue is full (a reader that stopped reading) are counted, never waited for.
 */
export class LogSink {
  private pending = '';
  private timer: NodeJS.Timeout | null = null;
  /** Lines dropped by the destination since start. */
  dropped = 0;

  constructor(
    private readonly out: LogOutput,
    private readonly options: LogSinkOptions,
  ) {
    out.on?.('drop', (text) => {
      this.dropped += countLines(text);
    });
  }

  /** pino's stream interface: the line goes out now. */
  write(line: string): boolean {
    this.pending += line;
    this.flush();
    return true;
  }

  /** A line that may wait a little, with others: request lines. */
  batch(line: string): void {
    this.pending += line;
    if (this.options.flushMs === 0 || this.pending.length >= this.options.batchChars) this.flush();
    else if (this.timer === null) this.timer = setTimeout(flushSink, this.options.flushMs, this).unref();
  }

  /** Hands whatever waits to the destination. */
  flush(): void {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.pending === '') return;
    const text = this.pending;
    this.pending = '';
    this.out.write(text);
  }

  /** Before exit: everything out, synchronously where the destination can. */
  flushSync(): void {
    this.flush();
    this.out.flushSync?.();
  }
}

function flushSink(sink: LogSink): void {
  sink.flush();
}

function countLines(text: string): number {
  let n = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n++;
  return n;
}
