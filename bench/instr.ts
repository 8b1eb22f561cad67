import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runs } from '../test/helpers/optional.js';
import { API, tokenHeaders } from './fixture.js';
import { requestHeads } from './load.js';
import { signed } from './median.js';
import { recordedClients } from './mix/mix.js';
import { floorAndTokenPath, MAIN, num, runBench, start, startUpstream, stopAll } from './process.js';
import { buildRef, writeResults } from './worktree.js';

/**
 * `npm run bench:instr [-- <git-ref>]`: instructions per request, counted by valgrind's callgrind,
 * for the bare undici proxy, the token path and the token path with one in-memory policy (and the
 * same two of another ref, built in a work tree). The count barely depends on what else the
 * machine runs, so it settles which build does more work where CPU time on shared cores cannot.
 * Each process runs with `--single-threaded` (V8 compiles and collects on the main thread, in step
 * with the requests rather than with a starved helper thread), is counted from its start, and
 * serves INSTR_WARMUP requests before the INSTR_REQUESTS it is measured on. What V8's optimising
 * compiler still spends then is shown apart: the JIT is not fully settled.
 * INSTR_MIX=1: every target is sent the recorded clients' requests in turn (mix/), not the fixed
 * one. INSTR_PAUSE=<s>: each process idles that long between its start and its first request (the
 * "slow state" of bench/README.md).
 */
const WARMUP = num('INSTR_WARMUP', 3000);
const REQUESTS = num('INSTR_REQUESTS', 2000);
const CONNECTIONS = 50;
const MIX = process.env.INSTR_MIX === '1' ? recordedClients() : undefined;
const PAUSE_MS = num('INSTR_PAUSE', 0) * 1000;

/** Instructions per request: all threads, and the part in V8's optimising compiler. */
interface Count {
  readonly total: number;
  readonly compiler: number;
}

/**
 * `n` GETs over CONNECTIONS keep-alive sockets, the heads sent as they are (a client library would
 * reorder them); each answer read by its content-length; any answer but 200 is an error.
 */
async function drive(port: number, n: number): Promise<void> {
  const requests = requestHeads(`http://127.0.0.1:${port}${API}`, tokenHeaders(), MIX);
  let next = 0;
  const connection = () =>
    new Promise<void>((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1');
      let buf = Buffer.alloc(0);
      const send = () =>
        next < n ? socket.write(requests[next++ % requests.length] ?? '') : socket.end(resolve);
      socket.on('connect', send).on('error', reject);
      socket.on('data', (chunk: Buffer) => {
        buf = Buffer.concat([buf, chunk]);
        for (let end = buf.indexOf('\r\n\r\n'); end !== -1; end = buf.indexOf('\r\n\r\n')) {
          const head = buf.subarray(0, end).toString('latin1');
          const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1]);
          if (!head.startsWith('HTTP/1.1 200') || !Number.isInteger(length))
            return reject(new Error(head.split('\r\n')[0]));
          if (buf.length < end + 4 + length) return;
          buf = buf.subarray(end + 4 + length);
          send();
        }
      });
    });
  await Promise.all(Array.from({ length: CONNECTIONS }, connection));
}

const COMPILER = /compiler::|turboshaft|maglev|Maglev|interpreter::|baseline::|OptimizedCompilationJob/;

/** The instructions of one callgrind dump (one thread): in all, and in V8's compiler. */
function split(file: string): Count {
  const text = execFileSync('callgrind_annotate', ['--threshold=100', '--auto=no', file], {
    encoding: 'utf8',
    maxBuffer: 1 << 28,
  });
  let total = 0;
  let compiler = 0;
  for (const line of text.split('\n')) {
    const m = /^\s*([\d,]+) \([^)]*\)\s+(.*)$/.exec(line);
    if (m?.[1] === undefined) continue;
    const ir = Number(m[1].replaceAll(',', ''));
    if (m[2]?.startsWith('PROGRAM TOTALS')) total = ir;
    else if (COMPILER.test(m[2] ?? '')) compiler += ir;
  }
  return { total, compiler };
}

async function count(name: string, args: string[]): Promise<Count> {
  const dir = mkdtempSync(join(tmpdir(), 'leadgate-instr-'));
  const valgrind = ['valgrind', '-q', '--tool=callgrind', '--separate-threads=yes'];
  const p = await start(['--single-threaded', ...args], {}, 'free', [
    ...valgrind,
    `--callgrind-out-file=${dir}/cg.%p`,
  ]);
  const pid = String(p.child.pid);
  const control = (flag: string) => execFileSync('callgrind_control', [flag, pid], { stdio: 'ignore' });
  try {
    if (PAUSE_MS > 0) await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
    await drive(p.port, WARMUP);
    control('--zero');
    await drive(p.port, REQUESTS);
    control('--dump');
    const threads = readdirSync(dir)
      .filter((f) => /-\d+$/.test(f))
      .map((f) => split(join(dir, f)));
    const sum = (of: (c: Count) => number) => threads.reduce((n, c) => n + of(c), 0) / REQUESTS;
    const c = { total: sum((t) => t.total), compiler: sum((t) => t.compiler) };
    process.stderr.write(
      `  ${name.padEnd(20)} ${fmt(c.total)} (of which V8's compiler ${fmt(c.compiler)})\n`,
    );
    return c;
  } finally {
    p.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

const fmt = (n: number) => `${(n / 1000).toFixed(1)}k`;

interface Report {
  readonly bare: Count;
  readonly a: Count;
  readonly aPolicy: Count;
  readonly b: Count | null;
  readonly bPolicy: Count | null;
  readonly ref: string | undefined;
  readonly commit: string | null;
}

/** Instructions per request but for V8's optimising compiler (still settling: how much varies). */
const settled = (c: Count) => c.total - c.compiler;

function report(r: Report) {
  const diff = (x: Count, y: Count) => {
    const d = settled(x) - settled(y);
    const all = x.total - y.total;
    return `${signed(d, fmt(d))} (${signed(d, ((100 * d) / settled(y)).toFixed(1))} %); with the compiler ${signed(all, fmt(all))}`;
  };
  console.log(
    `\ninstructions per request (${WARMUP} requests to warm up, ${REQUESTS} counted${MIX === undefined ? '' : ', the mixed clients'}${PAUSE_MS > 0 ? `, ${PAUSE_MS / 1000} s idle first` : ''}, node ${process.version})`,
  );
  const rows: Array<[string, Count | null]> = [
    ['bare undici proxy', r.bare],
    ['A token path', r.a],
    ['A token + 1 policy', r.aPolicy],
    ['B token path', r.b],
    ['B token + 1 policy', r.bPolicy],
  ];
  for (const [name, c] of rows) {
    if (c !== null)
      console.log(`  ${name.padEnd(20)} ${fmt(settled(c))}  (+ V8's optimising compiler ${fmt(c.compiler)})`);
  }
  console.log(`A's one in-memory policy: ${diff(r.aPolicy, r.a)}`);
  if (r.b !== null && r.bPolicy !== null) {
    console.log(`token path, A − B (${r.ref}, ${r.commit?.slice(0, 7)}): ${diff(r.a, r.b)}`);
    console.log(`token path + 1 policy, A − B: ${diff(r.aPolicy, r.bPolicy)}`);
  }
  const when = new Date().toISOString();
  writeResults('instr.json', {
    when,
    node: process.version,
    warmup: WARMUP,
    requests: REQUESTS,
    mix: MIX !== undefined,
    pause_s: PAUSE_MS / 1000,
    ...r,
  });
}

runBench(async () => {
  if (!runs('valgrind', ['--version']))
    throw new Error('bench:instr needs valgrind (Debian: apt-get install valgrind)');
  const ref = process.argv[2];
  const built = ref === undefined ? null : buildRef(ref);
  try {
    const t = floorAndTokenPath((await startUpstream()).port);
    process.stderr.write(`counting: ${WARMUP} requests to warm up, ${REQUESTS} counted, per target\n`);
    const bare = await count('bare undici proxy', t.bare);
    const a = await count('A token', t.token(MAIN));
    const aPolicy = await count('A token + 1 policy', t.policy(MAIN));
    const b = built === null ? null : await count('B token', t.token(built.main));
    const bPolicy = built === null ? null : await count('B token + 1 policy', t.policy(built.main));
    report({ bare, a, aPolicy, b, bPolicy, ref, commit: built?.commit ?? null });
  } finally {
    stopAll();
    built?.remove();
  }
});
