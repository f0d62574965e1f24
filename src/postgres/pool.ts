import pg from 'pg';
import { backoffDelayMs } from '../common/backoff.js';
import type { PgAvailability } from './availability.js';

/**
 * The one place this process's pooled PostgreSQL connections come from, so that none can end it.
 *
 * pg's Client is an EventEmitter: an `error` event with no listener ends the process. pg-pool
 * listens on a client only while it sits idle; a backend ended between two queries of a
 * transaction (server shutdown, `pg_terminate_backend`, a network cut) while the client is checked
 * out emitted an unhandled `error` (issue 25). Every client this pool opens gets a listener for its
 * whole life, on the pool's `connect` event. A broken client is not queryable any more, and pg-pool
 * destroys rather than keeps a released client in that state.
 *
 * Every connection attempt, and every client handed back sound, also feeds the availability tracker (./pgAvailability.ts), and one
 * refused for want of a free connection slot on the server (53300, `max_connections` reached by
 * others) is tried again with backoff until the connect timeout, taking a connection this pool
 * releases meanwhile, instead of failing the caller at once.
 */

/** SQLSTATE of "sorry, too many clients already". */
const TOO_MANY_CONNECTIONS = '53300';

/** Spacing of attempts while the server has no free connection slot. */
const SLOT_WAIT = { baseMs: 50, capMs: 1_000 };

/** What {@link ObservedPool} tells. */
export interface PoolObserver {
  availability: PgAvailability;
  /** A pooled connection broke (idle or in use); called once per connection. */
  onConnectionLost(err: Error): void;
}

type ConnectCallback = (
  err: Error | undefined,
  client: pg.PoolClient | undefined,
  done: (release?: unknown) => void,
) => void;

const isTooManyConnections = (err: unknown) =>
  (err as { code?: unknown } | null)?.code === TOO_MANY_CONNECTIONS;

/** pg.Pool whose clients are watched for life and whose connection attempts are observed. */
export class ObservedPool extends pg.Pool {
  constructor(
    config: pg.PoolConfig,
    private readonly observer: PoolObserver,
  ) {
    super(config);
    // Idle clients' errors reach the pool's `error` event too; the lifelong listener reports them.
    this.on('error', () => {});
    const broken = new WeakSet<pg.PoolClient>();
    const takenAt = new WeakMap<pg.PoolClient, number>();
    this.on('acquire', (client) => takenAt.set(client, observer.availability.now()));
    this.on('connect', (client) => {
      observer.availability.noteConnected();
      client.on('error', (err: Error) => {
        // pg emits the server's message, then "Connection terminated unexpectedly": one report.
        if (broken.has(client)) return;
        broken.add(client);
        observer.onConnectionLost(err);
      });
    });
    // A client handed back sound after its work: the server answered. An idle connection reused
    // after a failed attempt elsewhere proves the server there as well as a new one would.
    this.on('release', (err, client) => {
      const taken = takenAt.get(client);
      if (!err && !broken.has(client) && taken !== undefined) observer.availability.noteAnswered(taken);
    });
  }

  override connect(): Promise<pg.PoolClient>;
  override connect(callback: ConnectCallback): void;
  // pool.query() calls this.connect(callback): both forms go through the observed attempt.
  override connect(callback?: ConnectCallback): Promise<pg.PoolClient> | undefined {
    const attempt = this.observedConnect();
    if (!callback) return attempt;
    attempt.then(
      (client) => callback(undefined, client, (release) => client.release(release as Error | undefined)),
      (err: Error) => callback(err, undefined, () => {}),
    );
    return undefined;
  }

  private async observedConnect(): Promise<pg.PoolClient> {
    const deadline = Date.now() + (this.options.connectionTimeoutMillis ?? 0);
    for (let failures = 1; ; failures++) {
      try {
        return await super.connect();
      } catch (err) {
        this.observer.availability.noteConnectFailed(err);
        const delay = backoffDelayMs(failures, SLOT_WAIT, Math.random);
        if (!isTooManyConnections(err) || this.ending || Date.now() + delay > deadline) throw err;
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  }
}
