// The compose smoke alone, after the rest of the suite (see vitest.config.ts): it builds the
// images and runs Oncely's containers, which would load both cores under the other files.
// It uses the same shared services (test/global-setup.ts), started again for this run.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/integration/docker-smoke.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    testTimeout: 300_000,
    hookTimeout: 2_400_000,
    reporters: ['default', './test/summary-reporter.ts'],
  },
});
