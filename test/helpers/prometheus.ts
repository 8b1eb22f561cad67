import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, runs } from './optional.js';

export const hasPrometheus = runs('prometheus', ['--version']) && runs('promtool', ['--version']);

export interface TestPrometheus {
  readonly url: string;
  /** GET an HTTP API path; the decoded JSON. (Resolves once every target has been scraped.) */
  api<T = unknown>(path: string): Promise<{ status: string; data: T; error?: string }>;
  stop(): Promise<void>;
}

/** A real Prometheus of the test's own on 127.0.0.1, scraping `targets` every second as job "leadgate". */
export async function startPrometheus(targets: string[], ruleFiles: string[] = []): Promise<TestPrometheus> {
  const dir = mkdtempSync(join(tmpdir(), 'leadgate-prometheus-'));
  const port = await freePort();
  writeFileSync(
    join(dir, 'prometheus.yml'),
    `global: { scrape_interval: 1s, evaluation_interval: 1s }
rule_files: ${JSON.stringify(ruleFiles)}
scrape_configs:
  - job_name: leadgate
    static_configs: [{ targets: ${JSON.stringify(targets)} }]
`,
  );
  const child: ChildProcess = spawn(
    'prometheus',
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    { stdio: 'ignore' },
  );
  const url = `http://127.0.0.1:${port}`;
  const api = async <T>(path: string) =>
    (await (await fetch(`${url}${path}`)).json()) as { status: string; data: T };
  for (let i = 0; i < 200; i++) {
    const ready = await fetch(`${url}/-/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    if (child.exitCode !== null) throw new Error('prometheus exited');
    await new Promise((r) => setTimeout(r, 50));
  }
  // Prometheus applies new targets every 5 s: wait for the first scrape of them all.
  for (let i = 0; i < 150; i++) {
    const up = await api<{ result: unknown[] }>('/api/v1/query?query=up%20%3D%3D%201');
    if (up.data.result.length >= targets.length) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    api,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  };
}
