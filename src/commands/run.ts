import { startDaemon } from '../app/daemon.js';
import { openDaemonStores } from '../app/openStores.js';
import { createLogger } from '../common/log.js';
import type { Config } from '../config/config.js';
import { requireSettings } from '../config/configNeeds.js';
import { checkListenable } from '../http/httpListener.js';
import { createSdNotifier } from '../process/sdNotify.js';
import { onStopSignals } from '../process/stopSignals.js';

/** `vcu-sync run`: the daemon, until SIGTERM or SIGINT; exits 0 after a graceful stop. */
export async function runDaemonCommand(config: Config): Promise<number> {
  requireSettings(config, 'run');
  const log = createLogger({ level: config.log.level });
  await checkListenable([
    { key: 'api.listen', listen: config.api.listen },
    { key: 'webhook.listen', listen: config.webhook.listen },
  ]);
  // One daemon per SQLite file: refuses (one line, the running daemon's pid) before touching it.
  // PostgreSQL: one of any number of replicas on the database.
  const { ctx, stores } = await openDaemonStores(config, log);
  if (config.webhook.scheme === 'none') {
    log.warn(
      { event: 'webhook.unsigned' },
      'webhook.scheme is "none": webhooks are accepted without any signature',
    );
  }
  let daemon: Awaited<ReturnType<typeof startDaemon>>;
  try {
    daemon = await startDaemon(ctx, stores);
  } catch (err) {
    await stores.close();
    throw err;
  }
  const notifier = createSdNotifier(log);
  notifier.ready(`serving API on ${config.api.listen}, webhooks on ${config.webhook.listen}`);
  // Kept for the process's life: a repeated signal during the stop is noted, never fatal.
  onStopSignals({
    stop(signal) {
      notifier.stopping();
      void daemon.stop(signal);
    },
    repeated(signal, count) {
      log.info(
        { event: 'daemon.stop.signal_repeated', signal, count },
        `${signal} again: already stopping gracefully`,
      );
    },
  });
  await daemon.stopped;
  notifier.close();
  ctx.operator().close();
  // SQLite: closing checkpoints the WAL into the database file (wal_checkpoint(TRUNCATE)), then
  // frees the database for the next daemon. PostgreSQL: the pool's connections end.
  await stores.close();
  log.info({ event: 'daemon.exit' }, 'database closed; exiting');
  log.flush();
  // Everything is stopped and stored; a straggler (a request past its bound) must not keep the
  // process alive until systemd kills it.
  setTimeout(() => {
    process.exit(process.exitCode ?? 0);
  }, EXIT_GRACE_MS).unref();
  return 0;
}

/** How long the process may linger after a clean stop before it exits anyway, ms. */
const EXIT_GRACE_MS = 3_000;
