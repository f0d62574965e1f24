import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: ['default', './test/helpers/summaryReporter.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'main',
          include: ['test/**/*.test.ts'],
          exclude: ['test/bench/**', 'test/postgres/**', 'node_modules/**'],
        },
      },
      {
        // Tests against a real PostgreSQL server: the cluster starts only when one of these runs.
        extends: true,
        test: {
          name: 'postgres',
          include: ['test/postgres/**/*.test.ts'],
          globalSetup: ['./test/helpers/postgresSetup.ts'],
        },
      },
    ],
  },
});
