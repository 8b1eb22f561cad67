import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { requires, runs } from '../helpers/optional.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

const DOCS = new URL('../../docs/', import.meta.url).pathname;
const DEBIAN_GO_JWT = '/usr/share/gocode/src/github.com/golang-jwt/jwt';

const python = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

/** Each language: how to run its snippet, and whether this machine can. */
interface Language {
  readonly name: string;
  readonly file: string;
  readonly available: boolean;
  readonly how: string;
  /** The command that runs the snippet (after `prepare`). */
  command(): [string, string[]];
  prepare?(): void;
}

let goBinary = '';
const LANGUAGES: Language[] = [
  {
    name: 'Node',
    file: 'merchant/node.mjs',
    available: true,
    how: '',
    command: () => [process.execPath, [join(DOCS, 'merchant/node.mjs')]],
  },
  {
    name: 'Python',
    file: 'merchant/python.py',
    available: runs(python, ['-c', 'import jwt']),
    how: 'Debian: apt-get install python3-jwt',
    command: () => [python, [join(DOCS, 'merchant/python.py')]],
  },
  {
    name: 'PHP',
    file: 'merchant/php.php',
    available: runs('php', ['--version']),
    how: 'Debian: apt-get install php-cli',
    command: () => ['php', [join(DOCS, 'merchant/php.php')]],
  },
  {
    name: 'Ruby',
    file: 'merchant/ruby.rb',
    available: runs('ruby', ['-e', 'require "jwt"']),
    how: 'Debian: apt-get install ruby ruby-jwt',
    command: () => ['ruby', [join(DOCS, 'merchant/ruby.rb')]],
  },
  {
    name: 'Go',
    file: 'merchant/go/main.go',
    available: runs('go', ['version']) && existsSync(DEBIAN_GO_JWT),
    how: 'Debian: apt-get install golang-go golang-github-golang-jwt-jwt-dev',
    // Offline: the module's one dependency is Debian's copy of golang-jwt, by a replace directive.
    prepare() {
      const dir = mkdtempSync(join(tmpdir(), 'leadgate-go-'));
      copyFileSync(join(DOCS, 'merchant/go/main.go'), join(dir, 'main.go'));
      writeFileSync(
        join(dir, 'go.mod'),
        `module example.com/leadgate-snippet\n\ngo 1.19\n\nrequire github.com/golang-jwt/jwt/v4 v4.4.3\n\nreplace github.com/golang-jwt/jwt/v4 => ${DEBIAN_GO_JWT}\n`,
      );
      goBinary = join(dir, 'snippet');
      execFileSync('go', ['build', '-o', goBinary, '.'], {
        cwd: dir,
        env: {
          PATH: process.env.PATH,
          HOME: dir,
          GOPATH: join(dir, 'gopath'),
          GOCACHE: join(dir, 'cache'),
          GOFLAGS: '-mod=mod',
          GOPROXY: 'off',
          GOSUMDB: 'off',
        },
        stdio: 'pipe',
      });
    },
    command: () => [goBinary, []],
  },
];

let upstream: RecordingUpstream;
let gw: Awaited<ReturnType<typeof startTestGateway>>;
beforeAll(async () => {
  upstream = await startRecordingUpstream();
  upstream.behave((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"orders":[]}');
  });
  gw = await startTestGateway(writeConfig({ upstream: upstream.url }));
});
afterAll(async () => {
  await gw.close();
  await upstream.close();
});

/** Runs the snippet as a child process (asynchronously: the gateway answers it from this process). */
function run(lang: Language, env: Record<string, string>) {
  const [cmd, args] = lang.command();
  return new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(cmd, args, {
      env: { PATH: process.env.PATH, HOME: tmpdir(), ...env },
      timeout: 60_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

const secretEnv = () => ({
  LEADGATE_URL: `http://127.0.0.1:${gw.apiPort}`,
  LEADGATE_API_KEY: KEYS.storefront.key,
  LEADGATE_SIGNING_SECRET: KEYS.storefront.secret,
});

describe.each(LANGUAGES)('merchant snippet: $name', (lang) => {
  const here = requires(`${lang.name} for its merchant snippet`, lang.available, lang.how);
  it.runIf(here)(
    'does Path B and Path A against a running gateway, for a customer id with a space and ü',
    async () => {
      lang.prepare?.();
      const before = upstream.received.length;
      const r = await run(lang, { ...secretEnv(), CUSTOMER_ID: 'kunde 3 ü' });
      expect(r.stderr).toBe('');
      const pathA =
        lang.name === 'PHP' && !r.stdout.includes('path A: GET')
          ? 'path A: skipped (composer require firebase/php-jwt)'
          : 'path A: GET /api/v2/merchant/orders with a token signed here: 200';
      expect(r.stdout.trim().split('\n')).toEqual([
        'path B: lookup 200, lead lead-3, token for 3600 s',
        'path B: GET /api/v2/merchant/orders with the token: 200',
        pathA,
      ]);
      expect(r.status).toBe(0);
      const calls = upstream.received.slice(before);
      expect(calls.map((c) => c.headers['x-lead-id'])).toEqual(
        pathA.endsWith('200') ? ['lead-3', 'lead-3'] : ['lead-3'],
      );
      expect(r.stdout + r.stderr).not.toContain(KEYS.storefront.secret);
    },
  );

  it.runIf(here)('refuses to run without its secret, saying which variable, never printing it', async () => {
    const r = await run(lang, { ...secretEnv(), LEADGATE_SIGNING_SECRET: '' });
    expect(r.status).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('LEADGATE_SIGNING_SECRET');
  });
});

describe('docs/merchant.md', () => {
  it('shows each snippet file as it is, byte for byte', () => {
    const page = readFileSync(join(DOCS, 'merchant.md'), 'utf8');
    for (const lang of LANGUAGES) {
      const marker = `<!-- snippet: ${lang.file} -->`;
      const at = page.indexOf(marker);
      expect(at, marker).toBeGreaterThan(-1);
      const block = /```[a-z]*\n([\s\S]*?)```/.exec(page.slice(at))?.[1];
      expect(block, lang.file).toBe(readFileSync(join(DOCS, lang.file), 'utf8'));
    }
  });
});
