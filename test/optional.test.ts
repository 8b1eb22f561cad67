import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const helper = new URL('../dist/test/helpers/optional.js', import.meta.url).href;
const run = (env: NodeJS.ProcessEnv) => {
  const script = `import { requires } from '${helper}';
console.log(requires('tool-a', true, 'x'), requires('tool-b', false, 'apt-get install b'), requires('tool-b', false, 'apt-get install b'));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { env, encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
};

describe('optional tests', () => {
  it('skip saying why, once, and name how to get the tool', () => {
    const once = run({ PATH: process.env.PATH });
    expect(once.out).toBe('true false false\n');
    expect(
      once.err.match(/\[skipped\] tests that need tool-b: it is not here \(apt-get install b\)/g),
    ).toHaveLength(1);
  });

  it('fail on CI instead, where .ci/run installs every tool', () => {
    const ci = run({ PATH: process.env.PATH, CI: 'true' });
    expect(ci.code).not.toBe(0);
    expect(ci.err).toMatch(/tool-b is missing on CI: apt-get install b/);
  });
});
