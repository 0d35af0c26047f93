import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The chaos run owns a stack it breaks (its own Temporal, Postgres, S3, proxies) and
    // loads both cores; it runs on its own afterwards (vitest.chaos.config.ts), so it
    // neither competes with nor disturbs the other files.
    // The compose smoke builds images and runs containers: it runs alone too
    // (vitest.docker.config.ts).
    exclude: ['test/integration/chaos.test.ts', 'test/integration/docker-smoke.test.ts', '**/node_modules/**'],
    globalSetup: ['test/global-setup.ts'],
    // Temporal's native worker wants its own process; two cores, so two files at a time.
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    teardownTimeout: 30_000,
    reporters: ['default', './test/summary-reporter.ts'],
  },
});
