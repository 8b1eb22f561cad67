import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { leadDigest } from '../../src/client/index.js';
import { ROOT } from '../helpers/example.js';

const run = (cmd: string, args: string[], cwd: string) =>
  execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 600_000 });

// npm ci, npx and tsc in a fresh clone: minutes on a busy machine, none of it timed
vi.setConfig({ testTimeout: 300_000, hookTimeout: 300_000 });

let work: string;
let clone: string;
let consumer: string;
let packedFiles: string[];

/**
 * A fresh clone of this repository (what is committed, modes included), `npm ci` in it as a
 * newcomer runs it (its `prepare` builds), then the merchant package packed from that clone and
 * installed into an empty project.
 */
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'leadgate-clone-'));
  clone = join(work, 'leadgate');
  run('git', ['clone', '--quiet', '--no-hardlinks', ROOT, clone], work);
  run('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund'], clone);
  const packed = JSON.parse(
    run('npm', ['pack', '--json', '-w', 'packages/client', '--pack-destination', work], clone),
  ) as Array<{ filename: string; files: Array<{ path: string }> }>;
  packedFiles = packed[0]?.files.map((f) => f.path).sort() ?? [];
  consumer = join(work, 'consumer');
  run('mkdir', ['-p', consumer], work);
  writeFileSync(join(consumer, 'package.json'), '{ "name": "consumer", "private": true }\n');
  run(
    'npm',
    ['install', join(work, packed[0]?.filename ?? ''), '--offline', '--no-audit', '--no-fund'],
    consumer,
  );
}, 900_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('a fresh clone after npm ci', () => {
  it('has the binary executable as committed, and npx leadgate works whatever mode the build left on dist/', () => {
    expect(run('git', ['ls-files', '-s', 'bin/leadgate.js'], clone)).toMatch(/^100755 /);
    expect(statSync(join(clone, 'bin/leadgate.js')).mode & 0o111).not.toBe(0);
    // what tsc writes, and what npm does not always fix: a compiled entry point without x bits
    chmodSync(join(clone, 'dist/src/main.js'), 0o644);
    const r = spawnSync('npx', ['leadgate', '--version'], { cwd: clone, encoding: 'utf8', timeout: 120_000 });
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^leadgate \d+\.\d+\.\d+\n$/);
    expect(r.status).toBe(0);
  });
});

describe('@leadgate/client, packed and installed into an empty project', () => {
  const USE = `leadDigest('s3cret-signing-secret', 'shop-42', 1700000000)`;
  const EXPECTED = leadDigest('s3cret-signing-secret', 'shop-42', 1_700_000_000);

  it('ships its code, its types and its README, nothing else', () => {
    expect(packedFiles).toEqual(['README.md', 'dist/index.d.ts', 'dist/index.js', 'package.json']);
  });

  it('has no dependency: npm ls shows the package alone', () => {
    const tree = JSON.parse(run('npm', ['ls', '--all', '--json'], consumer)) as {
      dependencies: Record<string, { dependencies?: object }>;
    };
    expect(Object.keys(tree.dependencies)).toEqual(['@leadgate/client']);
    expect(tree.dependencies['@leadgate/client']?.dependencies ?? {}).toEqual({});
    const manifest = JSON.parse(
      readFileSync(join(consumer, 'node_modules/@leadgate/client/package.json'), 'utf8'),
    ) as Record<string, unknown>;
    expect(manifest.dependencies).toBeUndefined();
  });

  it('imports from ESM and requires from CommonJS', () => {
    writeFileSync(
      join(consumer, 'esm.mjs'),
      `import { leadDigest } from '@leadgate/client';\nconsole.log(${USE});\n`,
    );
    writeFileSync(
      join(consumer, 'cjs.cjs'),
      `const { leadDigest } = require('@leadgate/client');\nconsole.log(${USE});\n`,
    );
    for (const file of ['esm.mjs', 'cjs.cjs']) {
      expect(run(process.execPath, [file], consumer).trim(), file).toBe(EXPECTED);
    }
  });

  it('type-checks from TypeScript, and a wrong use is caught', () => {
    const tsc = join(ROOT, 'node_modules', '.bin', 'tsc');
    const config = {
      compilerOptions: {
        module: 'nodenext',
        moduleResolution: 'nodenext',
        strict: true,
        noEmit: true,
        types: [],
      },
      files: ['use.ts'],
    };
    writeFileSync(join(consumer, 'tsconfig.json'), JSON.stringify(config));
    writeFileSync(
      join(consumer, 'use.ts'),
      `import { leadDigest, signLeadToken, type SignOptions } from '@leadgate/client';\n` +
        `const options: SignOptions = { ttlS: 600 };\nexport const d: string = ${USE};\n` +
        `export const t: string = signLeadToken('s', 'lead-1', options);\n`,
    );
    expect(spawnSync(tsc, ['-p', consumer], { encoding: 'utf8' }).status).toBe(0);
    writeFileSync(
      join(consumer, 'use.ts'),
      `import { leadDigest } from '@leadgate/client';\nexport const d: number = ${USE};\n`,
    );
    expect(spawnSync(tsc, ['-p', consumer], { encoding: 'utf8' }).status).not.toBe(0);
  });
});
