import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // The Temporal native bridge has crashed under worker threads; forks isolate it per file.
    pool: 'forks',
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 600_000,
    teardownTimeout: 60_000,
  },
});
