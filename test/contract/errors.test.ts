import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { errorsMarkdown } from '../../src/auth/error-docs.js';
import { CATALOGUE, type ErrorCode } from '../../src/contract/errors.js';
import { requires } from '../helpers/optional.js';

/** Rows `| 401 | \`a\`, \`b\` |` of a markdown table: status → codes. */
function codesByStatus(markdown: string): Map<string, number> {
  const codes = new Map<string, number>();
  for (const line of markdown.split('\n')) {
    const m = /^\|\s*([0-9]{3}(?:\s*\/\s*[0-9]{3})?)\s*\|(.*)\|\s*$/.exec(line);
    if (!m?.[1] || !m[2]) continue;
    const statuses = m[1].split('/').map((s) => Number(s.trim()));
    // Remarks in parentheses name config fields and headers, not codes.
    const names = [...m[2].replace(/\([^)]*\)/g, '').matchAll(/`([a-z_]+)`/g)].map((x) => x[1] ?? '');
    names.forEach((name, i) => {
      codes.set(name, statuses.length === names.length ? (statuses[i] ?? 0) : (statuses[0] ?? 0));
    });
  }
  return codes;
}

// The contract lives in shared/, beside the checkout (CI always has it there).
const CONTRACT = new URL('../../../shared/design/CONTRACT.md', import.meta.url);
if (!existsSync(CONTRACT) && process.env.CI) throw new Error('../shared/design/CONTRACT.md is missing');

describe('error catalogue', () => {
  it.runIf(
    requires(
      'the design contract',
      existsSync(CONTRACT),
      'shared/design/CONTRACT.md beside the checkout, as CI has it',
    ),
  )('holds every code of CONTRACT §6 with its status', () => {
    const contract = readFileSync(CONTRACT, 'utf8');
    const section = contract.slice(contract.indexOf('## 6. Errors'), contract.indexOf('## 7.'));
    const expected = codesByStatus(section);
    expect(expected.size).toBeGreaterThan(20);
    for (const [code, status] of expected) {
      expect(CATALOGUE[code as ErrorCode]?.status, code).toBe(status);
    }
  });

  it('docs/reference/errors.md is generated from the catalogue, one example per code', () => {
    const doc = readFileSync(new URL('../../docs/reference/errors.md', import.meta.url), 'utf8');
    expect(doc).toBe(errorsMarkdown());
    for (const code of Object.keys(CATALOGUE)) expect(doc).toContain(`### ${code}\n`);
  });
});
