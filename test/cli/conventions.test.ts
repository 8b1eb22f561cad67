import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { cliMarkdown } from '../../src/cli/docs.js';
import { writeConfig } from '../helpers/fixture.js';
import { runCli } from '../helpers/process.js';

const version = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
const COMMANDS = ['serve', 'check', 'digest', 'token', 'hash-key'];

describe('command-line conventions', () => {
  it.each([['--version'], ['-v'], ['version']])('%s prints the version on stdout, exit 0', (flag) => {
    const r = runCli([flag]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`leadgate ${version}\n`);
    expect(r.stderr).toBe('');
  });

  it('help, --help and -h print the overview on stdout, exit 0', () => {
    for (const flag of ['help', '--help', '-h']) {
      const r = runCli([flag]);
      expect(r.code).toBe(0);
      for (const c of COMMANDS) expect(r.stdout).toContain(`leadgate ${c}`);
      expect(r.stderr).toBe('');
    }
  });

  it.each(COMMANDS)(
    'help %s, and the same command with --help or -h: its usage on stdout, exit 0',
    (command) => {
      const viaHelp = runCli(['help', command]);
      const viaFlag = runCli([command, '--help']);
      const viaShort = runCli([command, '-h']);
      expect(viaHelp.code).toBe(0);
      expect(viaHelp.stdout).toMatch(new RegExp(`^leadgate ${command}`));
      expect(viaFlag).toEqual(viaHelp);
      expect(viaShort).toEqual(viaHelp);
    },
  );

  it('usage errors go to stderr with exit 2: no command, unknown command, unknown option', () => {
    for (const args of [[], ['frobnicate'], ['help', 'frobnicate'], ['check', '--nope']]) {
      const r = runCli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/^leadgate: /);
    }
    expect(runCli(['check', '--nope']).stderr).toMatch(/unknown option --nope/);
  });

  it('never echoes what may be a credential typed in the wrong place', () => {
    const key = 'sk_live_0123456789abcdefSECRET';
    for (const args of [
      [key],
      ['hash-key', key],
      ['check', `--${key}`],
      ['check', `--nope=${key}`],
      ['token', key],
    ]) {
      const r = runCli(args, { env: { LEADGATE_SIGNING_SECRET: 'not-echoed-either-0000000000000000' } });
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr + r.stdout).not.toContain('SECRET');
      expect(r.stderr + r.stdout).not.toContain('not-echoed');
    }
  });

  it('token: a --ttl above the config lead_token.ttl_s is refused with a message', () => {
    const env = { LEADGATE_SIGNING_SECRET: 'a-signing-secret-of-32-bytes-or-more!' };
    const over = runCli(
      [
        'token',
        '--lead-id',
        'l',
        '--ttl',
        '7200',
        '--config',
        writeConfig({ upstream: 'http://127.0.0.1:9' }),
      ],
      { env },
    );
    expect(over.code).toBe(2);
    expect(over.stderr).toMatch(/--ttl 7200 is longer than lead_token\.ttl_s \(3600/);
    expect(over.stdout).toBe('');
    const within = runCli(
      [
        'token',
        '--lead-id',
        'l',
        '--ttl',
        '600',
        '--config',
        writeConfig({ upstream: 'http://127.0.0.1:9' }),
      ],
      { env },
    );
    expect(within.code).toBe(0);
    const noConfig = runCli(['token', '--lead-id', 'l', '--ttl', '3601'], { env });
    expect(noConfig.code).toBe(2);
    expect(noConfig.stderr).toMatch(/--ttl 3601 is longer than lead_token\.ttl_s \(3600, /);
  });

  it('docs/reference/cli.md carries the help text the binary prints', () => {
    const doc = readFileSync(new URL('../../docs/reference/cli.md', import.meta.url), 'utf8');
    expect(doc).toBe(cliMarkdown());
    for (const c of COMMANDS) expect(doc).toContain(runCli(['help', c]).stdout);
  });
});
