import { expect } from 'vitest';
import { healthSnapshotCases } from './healthSnapshot.cases.js';
import { sqliteHealthStore } from './healthStores.js';

/** The health snapshot's contract on SQLite, a temp file per case: no PostgreSQL needed. */

healthSnapshotCases('SQLite', async () => sqliteHealthStore(), {
  // One daemon per file: no replicas to list.
  ownParts: (snapshot) => expect(snapshot.replicas).toBeUndefined(),
});
