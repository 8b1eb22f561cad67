import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeConfig } from '../helpers/fixture.js';
import { runCli } from '../helpers/process.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

/**
 * `limits:` timeouts that cannot work together are config errors with file and line (issue 47,
 * point 5), from `check` and from `serve` alike: never Node's own "headersTimeout … must be <=
 * requestTimeout" at start.
 */
let upstream: RecordingUpstream;
beforeAll(async () => {
  upstream = await startRecordingUpstream();
});
afterAll(async () => upstream.close());

function configWith(limits: string): string {
  const path = writeConfig({ upstream: upstream.url });
  writeFileSync(path, `${readFileSync(path, 'utf8')}\nlimits:\n${limits}\n`);
  return path;
}

describe('limits that cannot work together', () => {
  it('request_timeout_ms below header_timeout_ms: check and serve name the file and line', () => {
    const path = configWith('  header_timeout_ms: 20000\n  request_timeout_ms: 8000');
    const line =
      readFileSync(path, 'utf8')
        .split('\n')
        .findIndex((l) => l.includes('request_timeout_ms')) + 1;
    const check = runCli(['check', '--config', path]);
    expect(check.code).toBe(1);
    expect(check.stderr).toContain(
      `gateway.yaml:${line}: limits.request_timeout_ms: must be at least header_timeout_ms (20000)`,
    );
    const served = runCli(['serve', '--config', path]);
    expect(served.code).not.toBe(0);
    expect(served.stderr + served.stdout).toContain(`gateway.yaml:${line}: limits.request_timeout_ms`);
    expect(served.stderr + served.stdout).not.toMatch(/headersTimeout/);
  });

  it('the defaults fit together, and so does a short request timeout with its header timeout below', () => {
    expect(
      runCli(['check', '--config', configWith('  header_timeout_ms: 2000\n  request_timeout_ms: 3000')]).code,
    ).toBe(0);
  });
});
