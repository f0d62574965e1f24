import type { TestProject } from 'vitest/node';
import { type ClusterInfo, startCluster } from './postgres.js';

/**
 * vitest globalSetup of the `postgres` project (vitest.config.ts): one throwaway cluster for the
 * whole run, started only when a test file of that project runs, stopped and removed after.
 * Test files read it with `inject('postgres')` and take a database each (createTestDatabase).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const cluster = await startCluster();
  project.provide('postgres', cluster.info);
  return () => cluster.stop();
}

declare module 'vitest' {
  export interface ProvidedContext {
    postgres: ClusterInfo;
  }
}
