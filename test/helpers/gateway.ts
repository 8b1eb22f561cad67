import { Writable } from 'node:stream';
import { type Gateway, startGateway } from '../../src/gateway.js';
import { createLogger } from '../../src/observability/log.js';

/** Log lines a gateway wrote, kept in memory so tests can read them. */
export class LogSink extends Writable {
  readonly lines: string[] = [];
  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    this.lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    done();
  }
  get text(): string {
    return this.lines.join('\n');
  }
}

/** A real gateway, built by the same code `leadgate serve` runs, on 127.0.0.1 port 0. */
export async function startTestGateway(
  configPath: string,
  opts: { now?: () => number; watch?: boolean } = {},
): Promise<Gateway & { logs: LogSink }> {
  const logs = new LogSink();
  const gateway = await startGateway({
    configPath,
    logger: createLogger({ level: 'debug', destination: logs, flushMs: 0 }),
    watch: opts.watch ?? false,
    now: opts.now,
  });
  return Object.assign(gateway, { logs });
}
