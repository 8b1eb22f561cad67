import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import net from 'node:net';

/** Resident memory of one process, in bytes (Linux /proc). */
export function rssOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) * 1024;
}

/** Samples a process's RSS every `everyMs` until stopped; `stop()` gives the highest seen. */
export function rssPeak(pid: number, everyMs = 50): { stop(): number } {
  let peak = rssOf(pid);
  const timer = setInterval(() => {
    peak = Math.max(peak, rssOf(pid));
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(peak, rssOf(pid));
    },
  };
}

export interface FloodOptions {
  /** One request, written again and again (pipelined). */
  readonly request: string;
  /** How many to write at most. */
  readonly count: number;
  /** Read (and drop) the answers as they come, or never read a byte. */
  readonly read: boolean;
  /** The server stopped reading when a write waits this long for `drain` (default 1500 ms). */
  readonly stallMs?: number;
  /** After the last write (or the stall), keep the connection open this long (default 0). */
  readonly holdMs?: number;
  /** When reading: after the last write, read on until every request is answered, or none was for this long (default 10 s). */
  readonly quietMs?: number;
}

export interface FloodResult {
  /** Requests the socket accepted (handed to the kernel or buffered by the client). */
  readonly written: number;
  /** A write waited `stallMs` for `drain`: the server was not reading. */
  readonly stalled: boolean;
  /** Bytes of answers read (0 when `read` is false). */
  readonly readBytes: number;
  /** Answers read: status lines seen (0 when `read` is false). */
  readonly answers: number;
  /** The server closed the connection (reset or end) before the flood ended it. */
  readonly closedByServer: boolean;
}

/**
 * One raw TCP connection that pipelines `request` as fast as the server lets it, in 64 KiB
 * writes, honouring backpressure: a write that is not drained within `stallMs` ends the flood
 * (the server stopped reading). The connection is destroyed at the end.
 */
export function flood(port: number, opts: FloodOptions): Promise<FloodResult> {
  const perWrite = Math.max(1, Math.floor(65_536 / opts.request.length));
  const batch = Buffer.from(opts.request.repeat(perWrite), 'latin1');
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let written = 0;
    let readBytes = 0;
    let finished = false;
    let lastData = Date.now();
    let answers = 0;
    let closedByServer = false;
    let ending = false;
    socket.on('close', () => {
      if (!ending) closedByServer = true;
    });
    let tail = '';
    if (opts.read)
      socket.on('data', (d: Buffer) => {
        readBytes += d.length;
        lastData = Date.now();
        const text = tail + d.toString('latin1');
        for (let i = text.indexOf('HTTP/1.1 '); i !== -1; i = text.indexOf('HTTP/1.1 ', i + 1)) answers++;
        tail = text.slice(-8);
      });
    else socket.pause();
    const end = (stalled: boolean) => {
      ending = true;
      closedByServer ||= socket.destroyed;
      socket.destroy();
      resolve({ written, stalled, readBytes, answers, closedByServer });
    };
    const finish = (stalled: boolean) => {
      if (finished) return;
      finished = true;
      if (!opts.read || socket.destroyed) return void setTimeout(() => end(stalled), opts.holdMs ?? 0);
      const quiet = opts.quietMs ?? 10_000;
      const check = setInterval(() => {
        if (answers < written && Date.now() - lastData < quiet && !socket.destroyed) return;
        clearInterval(check);
        end(stalled);
      }, 50);
    };
    socket.on('error', () => finish(false));
    socket.on('connect', () => {
      const pump = () => {
        while (written < opts.count) {
          const n = Math.min(perWrite, opts.count - written);
          written += n;
          const ok = socket.write(n === perWrite ? batch : batch.subarray(0, n * opts.request.length));
          if (!ok) {
            const timer = setTimeout(() => finish(true), opts.stallMs ?? 1_500);
            socket.once('drain', () => {
              clearTimeout(timer);
              if (!finished) pump();
            });
            return;
          }
        }
        finish(false);
      };
      pump();
    });
  });
}

/**
 * TCP connections process `pid` holds open (as file descriptors) to 127.0.0.1:`port`, from /proc:
 * what the process keeps, whatever the peer noticed.
 */
export function socketsTo(pid: number, port: number): number {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m?.[1] !== undefined) inodes.add(m[1]);
    } catch {
      // closed while listed
    }
  }
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  let n = 0;
  for (const table of ['tcp', 'tcp6']) {
    for (const line of readFileSync(`/proc/${pid}/net/${table}`, 'utf8').split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols[2]?.endsWith(`:${hexPort}`) && inodes.has(cols[9] ?? '')) n++;
    }
  }
  return n;
}
