import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leadDigest } from '../../src/client/index.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const tsc = join(root, 'node_modules', '.bin', 'tsc');
const npm = (args: string[], cwd: string) =>
  execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 180_000 });

let project: string;
let files: string[];
const EXPECTED = leadDigest('s3cret-signing-secret', 'cust-1', 1_700_000_000);
const USE = `leadDigest('s3cret-signing-secret', 'cust-1', 1_700_000_000)`;

/**
 * The package as a merchant gets it: `npm pack` (which runs `prepare`, the build), the tarball
 * installed into an empty project, `leadgate/client` imported from ESM, CommonJS and TypeScript.
 */
beforeAll(() => {
  project = mkdtempSync(join(tmpdir(), 'leadgate-consumer-'));
  // A checkout without dist/ (as from git), so the tarball's dist/ can only come from `prepare`;
  // packed from a copy, so that build never rewrites the dist/ other tests are running from.
  const checkout = join(project, 'checkout');
  for (const entry of [
    'package.json',
    'package-lock.json',
    'tsconfig.json',
    'vitest.config.ts',
    'README.md',
  ]) {
    cpSync(join(root, entry), join(checkout, entry));
  }
  for (const dir of ['src', 'bench', 'test', 'config', 'bin', 'packages'])
    cpSync(join(root, dir), join(checkout, dir), { recursive: true });
  symlinkSync(join(root, 'node_modules'), join(checkout, 'node_modules'));
  const packed = JSON.parse(npm(['pack', '--json', '--pack-destination', project], checkout)) as Array<{
    filename: string;
    files: Array<{ path: string }>;
  }>;
  files = packed[0]?.files.map((f) => f.path) ?? [];
  writeFileSync(join(project, 'package.json'), '{ "name": "consumer", "private": true }\n');
  npm(
    [
      'install',
      join(project, packed[0]?.filename ?? ''),
      '--no-audit',
      '--no-fund',
      '--prefer-offline',
      '--omit=dev',
    ],
    project,
  );
}, 240_000);

afterAll(() => rmSync(project, { recursive: true, force: true }));

describe('the packed package', () => {
  it('ships the built client and its types', () => {
    expect(files).toContain('dist/src/client/index.js');
    expect(files).toContain('dist/src/client/index.d.ts');
    expect(files).toContain('dist/src/main.js');
    expect(files).toContain('bin/leadgate.js');
    expect(files).toContain('dist/packages/client/src/index.js');
    expect(files.some((f) => f.startsWith('test/') || f.startsWith('bench/'))).toBe(false);
  });

  it('imports from ESM', () => {
    writeFileSync(
      join(project, 'esm.mjs'),
      `import { leadDigest } from 'leadgate/client';\nconsole.log(${USE});\n`,
    );
    expect(execFileSync(process.execPath, ['esm.mjs'], { cwd: project, encoding: 'utf8' }).trim()).toBe(
      EXPECTED,
    );
  });

  it('requires from CommonJS', () => {
    writeFileSync(
      join(project, 'cjs.cjs'),
      `const { leadDigest } = require('leadgate/client');\nconsole.log(${USE});\n`,
    );
    expect(execFileSync(process.execPath, ['cjs.cjs'], { cwd: project, encoding: 'utf8' }).trim()).toBe(
      EXPECTED,
    );
  });

  it.each([
    ['nodenext', 'nodenext'],
    ['bundler', 'esnext'],
  ])('type-checks from TypeScript with moduleResolution %s', (resolution, module) => {
    const dir = join(project, `ts-${resolution}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'use.ts'),
      `import { leadDigest, signLeadToken, type SignOptions } from 'leadgate/client';\n` +
        `const options: SignOptions = { ttlS: 600 };\nexport const d: string = ${USE};\n` +
        `export const t: string = signLeadToken('s', 'lead-1', options);\n`,
    );
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module,
          moduleResolution: resolution,
          strict: true,
          noEmit: true,
          types: [],
          typeRoots: [join(project, 'node_modules', '@types')],
        },
        files: ['use.ts'],
      }),
    );
    expect(() =>
      execFileSync(tsc, ['-p', dir], { cwd: project, encoding: 'utf8', stdio: 'pipe' }),
    ).not.toThrow();
    // and a wrong use is caught: the types are real
    writeFileSync(
      join(dir, 'use.ts'),
      `import { leadDigest } from 'leadgate/client';\nexport const d: number = ${USE};\n`,
    );
    expect(() => execFileSync(tsc, ['-p', dir], { cwd: project, encoding: 'utf8', stdio: 'pipe' })).toThrow();
  });
});
