import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { waitUntil } from '../../src/util/wait.js';
import { LEADS_YAML, writeConfig } from '../helpers/fixture.js';
import { BIN } from '../helpers/process.js';

/** True once the process catches SIGHUP (bit 0 of SigCgt in /proc/PID/status). */
const catchesHangup = (pid: number) => {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^SigCgt:\s*([0-9a-f]+)$/m)?.[1] ?? '0';
  return (BigInt(`0x${line}`) & 1n) === 1n;
};

const until = async (what: string, ok: () => boolean) => {
  if (!(await waitUntil(ok, 10_000))) throw new Error(`never: ${what}`);
};

describe('SIGHUP while serve starts', () => {
  // The leads file is a FIFO: the start blocks reading it until the test writes it, so the
  // signal surely comes before the config is loaded (no race with a quick start).
  it('is held, not fatal: the gateway starts, then reloads for it', async () => {
    const path = writeConfig({
      upstream: 'http://127.0.0.1:1',
      leads: null,
      extra: 'leads: { file: leads.fifo }',
    });
    const fifo = join(dirname(path), 'leads.fifo');
    execFileSync('mkfifo', [fifo]);
    const child = spawn(process.execPath, [BIN, 'serve', '--config', path], {
      env: { PATH: process.env.PATH, LEADGATE_WATCH: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString('utf8');
    });
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      const pid = child.pid ?? 0;
      await until('the process catches SIGHUP while its config is still unread', () => catchesHangup(pid));
      expect(out).not.toContain('leadgate ready');
      child.kill('SIGHUP');
      await writeFile(fifo, LEADS_YAML); // the start reads the leads now
      await until('ready', () => out.includes('"leadgate ready"'));
      // the held SIGHUP's reload reads the files again, the FIFO too
      await writeFile(fifo, LEADS_YAML);
      await until('the reload of the held SIGHUP', () => out.includes('"cause":"sighup"'));
      const reload = out.split('\n').find((l) => l.includes('"cause":"sighup"')) ?? '';
      expect(JSON.parse(reload)).toMatchObject({ cause: 'sighup', result: 'unchanged' });
      expect(out.indexOf('"leadgate ready"')).toBeLessThan(out.indexOf('"cause":"sighup"'));
      expect(child.exitCode).toBeNull();
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
  }, 30_000);
});
