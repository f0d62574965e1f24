import { execFile } from 'node:child_process';
import type { Logger } from '../common/log.js';

/**
 * systemd readiness and watchdog notifications. Node has no unix datagram sockets, so this runs
 * `systemd-notify`, which (systemd 246+) waits until the manager has processed the message and
 * so does not race with its own exit. Does nothing outside systemd (no $NOTIFY_SOCKET).
 */
export interface SdNotifier {
  ready(status: string): void;
  stopping(): void;
  close(): void;
}

export function createSdNotifier(log: Logger, env: NodeJS.ProcessEnv = process.env): SdNotifier {
  if (!env.NOTIFY_SOCKET) return { ready() {}, stopping() {}, close() {} };
  const send = (...messages: string[]) => {
    execFile('systemd-notify', [`--pid=${process.pid}`, ...messages], (err) => {
      if (err) log.warn({ event: 'systemd.notify.failed', err }, 'systemd-notify failed');
    });
  };
  let watchdog: NodeJS.Timeout | undefined;
  const usec = Number(env.WATCHDOG_USEC);
  return {
    ready(status) {
      send('--ready', `--status=${status}`);
      if (Number.isFinite(usec) && usec > 0) {
        // Half the watchdog interval, as sd_watchdog_enabled(3) advises.
        watchdog = setInterval(() => send('WATCHDOG=1'), Math.max(1000, usec / 2000));
        watchdog.unref();
      }
    },
    stopping() {
      send('STOPPING=1');
    },
    close() {
      clearInterval(watchdog);
    },
  };
}
