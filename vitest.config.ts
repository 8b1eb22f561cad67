import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Real CommonJS interop, as plain `node` sees it: no synthesized default exports.
    deps: { interopDefault: false },
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: 'forks',
    // Every temporary file of a run in one folder, removed at the end (test/helpers/temp-root.ts).
    globalSetup: ['test/helpers/temp-root.ts'],
  },
});
