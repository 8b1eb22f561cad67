import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { leadDigest } from '../src/client/index.js';
import { requires } from './helpers/optional.js';
import { hasPython } from './helpers/python.js';

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const block = (lang: string): string => {
  const m = new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``).exec(README);
  if (!m?.[1]) throw new Error(`no ${lang} block in the README`);
  return m[1];
};
const SECRET = 'storefront-signing-secret-example';

describe('README snippets', () => {
  it.runIf(requires('python3', hasPython, 'Debian: apt-get install python3'))(
    'the Python digest snippet agrees with leadgate',
    () => {
      const script = `${block('python')}\nprint(headers["x-timestamp"], headers["x-leaddigest"])\n`;
      const out = execFileSync('python3', ['-c', script], {
        env: { LEADGATE_SIGNING_SECRET: SECRET },
        encoding: 'utf8',
      }).trim();
      const [ts, digest] = out.split(' ');
      expect(digest).toBe(leadDigest(SECRET, 'shop-42', Number(ts)));
    },
  );

  it("the Node snippet names the client module's real exports", async () => {
    const js = block('js');
    const client = await import('../src/client/index.js');
    for (const name of /import \{ ([^}]+) \} from 'leadgate\/client'/
      .exec(js)?.[1]
      ?.split(',')
      .map((s) => s.trim()) ?? []) {
      expect(typeof (client as Record<string, unknown>)[name], name).toBe('function');
    }
  });

  it('the Node snippet runs: it reads LEADGATE_SIGNING_SECRET, and says so clearly when unset', () => {
    const client = new URL('../dist/src/client/index.js', import.meta.url).href;
    const script = `${block('js').replace("'leadgate/client'", `'${client}'`)}\nconsole.log(ts, digest);\n`;
    const run = (env: NodeJS.ProcessEnv) =>
      execFileSync(process.execPath, ['--input-type=module', '-e', script], {
        env,
        encoding: 'utf8',
        stdio: 'pipe',
      });
    const [ts, digest] = run({ LEADGATE_SIGNING_SECRET: SECRET }).trim().split(' ');
    expect(digest).toBe(leadDigest(SECRET, 'shop-42', Number(ts)));
    expect(() => run({})).toThrow(/LeadgateClientError: the signing secret is missing/);
  });

  it('opens with the two commands: start and test', () => {
    const first = block('sh').split('\n');
    expect(first[0]).toMatch(/npm start/);
    expect(first[1]).toMatch(/npm test/);
    const ci = readFileSync(new URL('../.ci/run', import.meta.url), 'utf8');
    // CI runs that same command, once per supported Node line.
    expect(ci).toMatch(/^\s*on "\$bin" npm test\b/m);
  });
});
