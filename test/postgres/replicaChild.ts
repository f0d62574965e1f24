import { holdLiveness } from '../../src/postgres/liveness.js';
import { openPostgres } from '../../src/postgres/open.js';
import { PgOperationsStore } from '../../src/postgres/operationsStore.js';

/**
 * A replica in a child process: holds its liveness lock, claims what it can (lease far in the
 * future), says what it claimed on stdout as one JSON line, then waits to be killed.
 * Arguments: database URL, lease owner, now (ISO), lease end (ISO).
 */
const [url, owner, now, leaseUntil] = process.argv.slice(2) as [string, string, string, string];
const db = await openPostgres(url, { migrate: false, max: 2 });
const live = await holdLiveness(db.pool, { owner, name: 'vcu-sync', holds: 'outbox', now });
const store = new PgOperationsStore(db.pool);
const rows = await store.claim({ owner, now, leaseUntil, limit: 10 });
process.stdout.write(`${JSON.stringify({ claimed: rows.map((r) => r.id), pid: live.pid })}\n`);
// Hold the claims until SIGKILL.
setInterval(() => {}, 1 << 30);
