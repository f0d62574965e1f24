import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Guards against a hang, not a measure of speed (tests never rely on them). The child-process
    // tests (CLI runs, daemons, crash loops) take several times their quiet duration when every core
    // is busy: under .ci/flake-loop's burners a 3-run `vcu-sync sync` test took 61 s against 60.
    testTimeout: 180_000,
    hookTimeout: 180_000,
    pool: 'forks',
    reporters: ['default', './test/helpers/summaryReporter.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'main',
          include: ['test/**/*.test.ts'],
          // A contract suite's PostgreSQL half (test/contract/*.pg.test.ts) runs in `postgres`; its
          // SQLite half (*.sqlite.test.ts) here, with no cluster (test/contract/README.md).
          exclude: ['test/bench/**', 'test/postgres/**', 'test/contract/**/*.pg.test.ts', 'node_modules/**'],
        },
      },
      {
        // Tests against a real PostgreSQL server: the cluster starts only when one of these runs.
        extends: true,
        test: {
          name: 'postgres',
          include: ['test/postgres/**/*.test.ts', 'test/contract/**/*.pg.test.ts'],
          globalSetup: ['./test/helpers/postgresSetup.ts'],
        },
      },
    ],
  },
});
