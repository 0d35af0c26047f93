// The chaos run alone, after the rest of the suite (see vitest.config.ts). It needs none of
// the shared services of test/global-setup.ts: the runner starts everything it breaks.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/integration/chaos.test.ts'],
    pool: 'forks',
    testTimeout: 420_000,
    reporters: ['default', './test/summary-reporter.ts'],
  },
});
