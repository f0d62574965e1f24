import type pg from 'pg';
import { isoAt } from '../clock.js';
import { type DatabaseFacts, NO_FAULTS } from '../db/faults.js';
import { inPgTransaction } from '../db/pg.js';
import { type PgAvailability, unreachableReason } from '../db/pgAvailability.js';
import { errorMessage } from '../errors.js';
import { drivePostgres, postgresScriptStore } from '../store/postgresScripts.js';
import { pgReadAdvice } from './pgAdvice.js';
import type { HealthReads } from './snapshot.js';
import { healthReads, type SnapshotEdge } from './snapshotReads.js';

/**
 * PostgreSQL's part of the health reads (the statements are ./snapshotReads.ts's): the snapshot in
 * one REPEATABLE READ, READ ONLY transaction, so every figure is of one moment; a server that
 * cannot be reached reported as such. Write failures, locks and corruption are SQLite's file-level
 * faults: the server has its own log.
 */

/**
 * How a failed read of the PostgreSQL snapshot is reported: a server that cannot be reached is
 * `unreachable` (since when `availability` says, when given), anything else a read error.
 */
export function pgReadFailed(err: unknown, availability?: PgAvailability): DatabaseFacts {
  const reason = unreachableReason(err);
  // pg's messages name host:port at most, never the URL's password.
  if (reason === null) return { ...NO_FAULTS, readError: errorMessage(err), readAction: pgReadAdvice(err) };
  const outage = availability?.outage();
  return { ...NO_FAULTS, unreachable: { reason, since: outage ? isoAt(outage.since) : null } };
}

function pgSnapshotEdge(pool: pg.Pool, availability: PgAvailability | undefined): SnapshotEdge {
  return {
    atOneMoment: (script) =>
      inPgTransaction(pool, async (client) => {
        await client.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
        return drivePostgres(client, script);
      }),
    databaseFacts: () => ({ ...NO_FAULTS }),
    readFailed: (err) => pgReadFailed(err, availability),
  };
}

/** The health reads of a PostgreSQL database; `availability` dates an outage (default: undated). */
export function pgHealthReads(pool: pg.Pool, availability?: PgAvailability): HealthReads {
  return healthReads(postgresScriptStore(pool), pgSnapshotEdge(pool, availability));
}
