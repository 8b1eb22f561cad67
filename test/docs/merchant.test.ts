import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect } from '../helpers/collect.js';
import { blocksRunBy } from '../helpers/doc-blocks.js';
import { type Example, ROOT, startExample } from '../helpers/example.js';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { requires, runs } from '../helpers/optional.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

const DOCS = new URL('../../docs/', import.meta.url).pathname;

const python = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

/** Each language: how to run its snippet, and whether this machine can. */
interface Language {
  readonly name: string;
  readonly file: string;
  readonly available: boolean;
  readonly how: string;
  /** The command that runs the snippet, and the folder it runs in. */
  command(): [string, string[], string];
}

const GO_DIR = join(DOCS, 'merchant/go');
const LANGUAGES: Language[] = [
  {
    name: 'Node',
    file: 'merchant/node.mjs',
    available: true,
    how: '',
    command: () => [process.execPath, [join(DOCS, 'merchant/node.mjs')], DOCS],
  },
  {
    name: 'Python',
    file: 'merchant/python.py',
    available: runs(python, ['-c', 'import jwt']),
    how: 'Debian: apt-get install python3-jwt',
    command: () => [python, [join(DOCS, 'merchant/python.py')], DOCS],
  },
  {
    name: 'PHP',
    file: 'merchant/php.php',
    available: runs('php', ['--version']),
    how: 'Debian: apt-get install php-cli',
    command: () => ['php', [join(DOCS, 'merchant/php.php')], DOCS],
  },
  {
    name: 'Ruby',
    file: 'merchant/ruby.rb',
    available: runs('ruby', ['-e', 'require "jwt"']),
    how: 'Debian: apt-get install ruby ruby-jwt',
    command: () => ['ruby', [join(DOCS, 'merchant/ruby.rb')], DOCS],
  },
  {
    name: 'Go',
    file: 'merchant/go/main.go',
    available: runs('go', ['version']),
    how: 'Debian: apt-get install golang-go',
    // as the page says: `go run .` in the shipped folder (go.mod and vendor/ as they are), offline
    command: () => ['go', ['run', '.'], GO_DIR],
  },
];

/** A machine with no network for Go and a home of its own: what a fresh CI machine has. */
const HOME = mkdtempSync(join(tmpdir(), 'leadgate-merchant-home-'));
const RUNTIME_ENV = {
  PATH: process.env.PATH,
  HOME,
  GOPROXY: 'off',
  GOFLAGS: '',
  GOCACHE: join(HOME, 'go-cache'),
};

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
  rmSync(HOME, { recursive: true, force: true });
});

/** Runs the snippet as a child process (asynchronously: the gateway answers it from this process). */
function run(lang: Language, env: Record<string, string>) {
  const [cmd, args, cwd] = lang.command();
  return collect(cmd, args, { cwd, env: { ...RUNTIME_ENV, ...env }, timeoutMs: 120_000 });
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

describe('docs/guides/merchant.md', () => {
  it('shows each snippet file as it is, byte for byte', () => {
    const page = readFileSync(join(DOCS, 'guides/merchant.md'), 'utf8');
    for (const lang of LANGUAGES) {
      const marker = `<!-- snippet: ${lang.file} -->`;
      const at = page.indexOf(marker);
      expect(at, marker).toBeGreaterThan(-1);
      const block = /```[a-z]*\n([\s\S]*?)```/.exec(page.slice(at))?.[1];
      expect(block, lang.file).toBe(readFileSync(join(DOCS, lang.file), 'utf8'));
    }
  });
});

const PAGE = 'docs/guides/merchant.md';

/** The page's expected output: the block after "Each prints:". */
function expectedOutput(): string[] {
  const page = readFileSync(join(DOCS, 'guides/merchant.md'), 'utf8');
  const block = /Each prints:\n\n```\n([\s\S]*?)```/.exec(page)?.[1];
  if (block === undefined) throw new Error('no expected output on the page');
  return block.trim().split('\n');
}

describe('docs/guides/merchant.md, as a merchant runs it against npm start', () => {
  const all = LANGUAGES.every((l) => l.available);
  const here = requires(
    'every merchant runtime',
    all,
    'Debian: apt-get install php-cli ruby ruby-jwt golang-go python3-jwt',
  );
  let example: Example;
  beforeAll(async () => {
    if (here) example = await startExample();
  });
  afterAll(async () => {
    await example?.stop();
  });

  it.runIf(here)(
    "runs the page's block as it is: every snippet prints the page's expected output",
    async () => {
      const [block] = blocksRunBy(PAGE, 'test/docs/merchant.test.ts');
      expect(block).toBeDefined();
      // The one difference from the page: npm start listens where the test put it, not on 8080.
      const r = await collect('bash', ['-e', '-c', block?.text ?? 'false'], {
        cwd: ROOT,
        env: { ...RUNTIME_ENV, LEADGATE_URL: `http://127.0.0.1:${example.apiPort}` },
        timeoutMs: 240_000,
      });
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const expected = expectedOutput();
      const runsOnPage = (block?.text ?? '')
        .split('\n')
        .filter((l) => /^(node|python3|php|ruby|\(cd go)/.test(l));
      expect(runsOnPage).toHaveLength(LANGUAGES.length);
      // three lines per snippet; Path A may say it is skipped where its JWT library is not
      // installed for the `python3`, `php` or `ruby` on PATH (the page says so; the tests above run it)
      const printed = r.stdout.trim().split('\n');
      expect(printed).toHaveLength(3 * LANGUAGES.length);
      const asExpected = printed.map((line, i) =>
        i % 3 === 2 && /^path A: skipped \(/.test(line) ? expected[2] : line,
      );
      expect(asExpected).toEqual(LANGUAGES.flatMap(() => expected));
    },
    300_000,
  );

  it.runIf(here)(
    'Path B needs the standard library alone: Python and Ruby without their JWT library',
    async () => {
      const env = {
        ...RUNTIME_ENV,
        LEADGATE_URL: `http://127.0.0.1:${example.apiPort}`,
        LEADGATE_API_KEY: 'sk_storefront_example_0123456789',
        LEADGATE_SIGNING_SECRET: 'storefront-signing-secret-example',
      };
      const [first, second] = expectedOutput();
      // -S: no site-packages (no PyJWT); Ruby without gems and without Debian's vendor_ruby (no ruby-jwt)
      const py = spawnSync(python, ['-S', 'python.py'], { cwd: `${DOCS}merchant`, env, encoding: 'utf8' });
      expect(py.stdout.trim().split('\n')).toEqual([first, second, 'path A: skipped (pip install PyJWT)']);
      expect(py.status).toBe(0);
      const rb = spawnSync(
        'ruby',
        [
          '--disable-gems',
          '-e',
          '$LOAD_PATH.reject! { |p| p.include?("vendor_ruby") }; load ARGV[0]',
          'ruby.rb',
        ],
        { cwd: `${DOCS}merchant`, env, encoding: 'utf8' },
      );
      expect(rb.stdout.trim().split('\n')).toEqual([first, second, 'path A: skipped (gem install jwt)']);
      expect(rb.status).toBe(0);
    },
    120_000,
  );
});
