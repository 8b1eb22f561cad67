// Mutation testing of the security core (issue 32): `npm run mutate`.
// @ts-check
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  // The files that decide who gets through and what reaches the upstream: the §3 checks, the
  // header-name rules (identity, credential, forwarding and method-override spellings), which client
  // headers never pass (hop-by-hop, Connection-named, forward-auth copies) and what the upstream gets.
  mutate: [
    'src/auth/lead-token.ts',
    'src/auth/lead-digest.ts',
    'src/auth/client-ip.ts',
    'src/auth/path.ts',
    'src/auth/api-key.ts',
    'src/auth/access.ts',
    'src/auth/query.ts',
    'src/auth/source.ts',
    'src/auth/header-names.ts',
    'src/http/reserved-headers.ts',
    'src/http/headers.ts',
  ],
  testRunner: 'vitest',
  // Each mutant runs only the tests that reached it.
  coverageAnalysis: 'perTest',
  // The unit tests of the checks: pure functions, no server to start, so one mutant costs a second
  // or two. The same rules are also tried on the wire (test/http/security-core.test.ts and the
  // other gateway suites), but each of those files starts gateways, and every mutant would start
  // them again: hours on a shared 2-core machine. Fewer tests can only lower the score.
  testFiles: [
    'test/auth/checks.test.ts',
    'test/auth/client-ip.test.ts',
    'test/auth/header-names.test.ts',
    'test/auth/lead-digest.test.ts',
    'test/auth/lead-token.test.ts',
    'test/auth/path.test.ts',
    'test/auth/query.test.ts',
    'test/http/headers.test.ts',
    'test/http/reserved-header-rules.test.ts',
  ],
  vitest: { configFile: 'vitest.config.ts', related: true },
  dryRunTimeoutMinutes: 20,
  // No type checker: Stryker's TypeScript support calls a compiler API that TypeScript 7 no longer
  // has, and a tsconfig that does not exist turns its tsconfig rewriting off too.
  checkers: [],
  tsconfigFile: 'test/mutation/no-tsconfig.json',
  // No `// @ts-nocheck` is written into the sandbox's files: a test compares docs snippets byte for byte.
  disableTypeChecks: false,
  // Error messages are not scored: tests assert codes, not messages (the project's rule).
  mutator: { excludedMutations: ['StringLiteral'] },
  // A re-run tests only the mutants whose code or covering tests changed; `npm run mutate -- --force` runs all.
  incremental: true,
  incrementalFile: 'test/mutation/stryker-incremental.json',
  // Mutants in module-level constants (the path and digest regexes, the header sets) take effect
  // only when a module loads, so each would rerun every test: too slow on a shared 2-core machine.
  // They are reported as ignored (51 in this scope); `npx stryker run --ignoreStatic false` runs them.
  ignoreStatic: true,
  // The machine and CI runners are shared: one test process (`-- --concurrency 2` on an idle machine).
  concurrency: 1,
  timeoutMS: 60_000,
  // The score table on the console; every mutant, with the tests that reached it, in the HTML report.
  reporters: ['clear-text', 'progress', 'html'],
  clearTextReporter: { reportTests: false, reportMutants: false },
  htmlReporter: { fileName: 'reports/mutation/mutation.html' },
  thresholds: { high: 95, low: 90, break: 90 },
  // The sandbox needs sources, tests, docs, config and `dist` (built by `npm run mutate` first: tests
  // that start the `leadgate` binary run it from there, unmutated); not caches.
  ignorePatterns: ['.cache', '.image', 'coverage', 'bench/results', 'reports'],
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
};
