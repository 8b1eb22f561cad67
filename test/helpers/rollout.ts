import { type ChildProcess, spawn } from 'node:child_process';
import http from 'node:http';
import type { Socket } from 'node:net';
import { KEYS } from './fixture.js';
import { type Served, serve } from './process.js';

/**
 * The kubelet's termination of one pod, played with real processes: a backend that exits at once
 * on SIGTERM (the worst app), leadgate in front of it, and keep-alive clients that go on sending
 * to the pod until the endpoint removal has reached them (`propagationMs` after the deletion).
 */
export interface Termination {
  /** native: the app stops first, leadgate once it has exited. classic: both are signalled at once. */
  readonly mode: 'native' | 'classic';
  /** The app container's preStop sleep, in ms (0: none). */
  readonly appPreStopMs: number;
  /** leadgate's `shutdown.delay_s`. */
  readonly delayS: number;
  /** How long clients still send to the pod after its deletion. */
  readonly propagationMs: number;
}

export interface Outcome {
  readonly sent: number;
  /** Requests sent between the deletion and the propagation: the load the termination met. */
  readonly sentAfterDeletion: number;
  /** Answers other than 200, and requests that failed (reset, refused, hang-up). */
  readonly failed: number;
  readonly failures: Record<string, number>;
  /** Connections the clients opened after the deletion (each is a reconnect). */
  readonly reconnects: number;
  readonly leadgateExit: number | null;
}

const CLIENTS = 6;
const PAUSE_MS = 20;

export async function playTermination(
  t: Termination,
  configFor: (upstream: string) => string,
): Promise<Outcome> {
  const backend = await startBackend();
  try {
    const gate = await serve(configFor(`http://127.0.0.1:${backend.port}`));
    try {
      return await underLoad(t, gate, backend.child);
    } finally {
      await gate.stop();
    }
  } finally {
    if (backend.child.exitCode === null) backend.child.kill('SIGKILL');
  }
}

async function underLoad(t: Termination, gate: Served, app: ChildProcess): Promise<Outcome> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS });
  const failures: Record<string, number> = {};
  let sent = 0;
  let sentAfterDeletion = 0;
  let reconnects = 0;
  let deleted = false;
  let sending = true;
  const one = () =>
    new Promise<void>((resolve) => {
      sent++;
      if (deleted) sentAfterDeletion++;
      const req = http.get(
        { host: '127.0.0.1', port: gate.apiPort, path: '/api/v2/merchant/orders', agent, headers: HEADERS },
        (res) => {
          res.resume();
          res.on('end', () => {
            if (res.statusCode !== 200) count(failures, String(res.statusCode));
            resolve();
          });
        },
      );
      req.on('socket', (socket: Socket) => {
        if (deleted && !req.reusedSocket && socket.connecting) reconnects++;
      });
      req.on('error', (err: NodeJS.ErrnoException) => {
        count(failures, err.code ?? err.message);
        resolve();
      });
    });
  const loops = Array.from({ length: CLIENTS }, async () => {
    while (sending) {
      await one();
      await sleep(PAUSE_MS);
    }
  });
  await sleep(300);
  deleted = true;
  const clientsMoveOn = sleep(t.propagationMs).then(() => {
    sending = false;
  });
  await kubelet(t, app, gate.child);
  await clientsMoveOn;
  await Promise.all(loops);
  agent.destroy();
  const leadgateExit = await gate.exited;
  const failed = Object.values(failures).reduce((a, b) => a + b, 0);
  return { sent, sentAfterDeletion, failed, failures, reconnects, leadgateExit };
}

/** What the kubelet does once the pod is deleted (the Pod's containers, in their order). */
async function kubelet(t: Termination, app: ChildProcess, leadgate: ChildProcess): Promise<void> {
  const appExited = new Promise<void>((r) => app.once('exit', () => r()));
  const gateExited = new Promise<void>((r) => leadgate.once('exit', () => r()));
  if (t.mode === 'classic') leadgate.kill('SIGTERM');
  await sleep(t.appPreStopMs);
  app.kill('SIGTERM');
  await appExited;
  if (t.mode === 'native') leadgate.kill('SIGTERM');
  await gateExited;
}

/** An app that answers in 5–15 ms and exits at once on SIGTERM, in flight or not. */
const BACKEND = `
const http = require('node:http');
const server = http.createServer((req, res) => setTimeout(() => res.end('ok'), 5 + Math.random() * 10));
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
process.on('SIGTERM', () => process.exit(0));
`;

async function startBackend(): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, ['-e', BACKEND], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout?.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
    child.once('exit', () => reject(new Error('backend did not start')));
  });
  return { child, port };
}

const HEADERS = { 'x-apikey': KEYS.server.key, 'x-source': 'web' };

function count(into: Record<string, number>, what: string): void {
  into[what] = (into[what] ?? 0) + 1;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
