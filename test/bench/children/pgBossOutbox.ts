/**
 * pg-boss used as an outbox in a process of its own, as a marketplace would run it and as the
 * daemon it is compared with runs: started fresh, so neither side drains with code the other's run
 * already warmed. Args: one JSON {@link PgBossOutboxJob}. Prints one JSON line `{ "seconds": S }`.
 */
import { readFileSync } from 'node:fs';
import { loadPgBoss, pgBossDrain } from '../lib/pgBossDrain.js';

export interface PgBossOutboxJob {
  url: string;
  notifyUrl: string;
  apiKey: string;
  /** A file of the request bodies, one JSON array of strings (too many for an argument). */
  bodiesFile: string;
  fetchers: number;
  batchSize: number;
}

const job = JSON.parse(process.argv[2] ?? '') as PgBossOutboxJob;
const boss = await loadPgBoss();
if (!('PgBoss' in boss)) throw new Error(boss.missing);
const bodies = JSON.parse(readFileSync(job.bodiesFile, 'utf8')) as string[];
const seconds = await pgBossDrain(boss.PgBoss, { ...job, bodies });
process.stdout.write(`${JSON.stringify({ seconds })}\n`);
