import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';

/**
 * A lease owner for this process's claims: the host and pid (for `pg_stat_activity`, status and
 * logs) and a random tail, so a restarted container that reuses pid 1 is a new owner. Here, below
 * every folder, because the dispatchers (outbox/, subscribers/) and the PostgreSQL daemon all need
 * it and health/ sits above them.
 */
export function newLeaseOwner(): string {
  return `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
}
