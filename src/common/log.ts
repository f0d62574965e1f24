import { type DestinationStream, type Logger, pino } from 'pino';
import { redactDeep, scrubText } from './redact.js';

export type { Logger } from 'pino';

/** Options of the process logger. */
export interface LogOptions {
  /** pino level (default: "info"). */
  level?: string;
  /** Where lines go (default: stdout; pretty-printed when stdout is a TTY). */
  destination?: DestinationStream;
  /** Pretty-print instead of JSON (default: whether the output is a TTY). */
  pretty?: boolean;
  /** File descriptor: 1 for the daemon (journald), 2 for one-shot commands whose stdout is data (default: 1). */
  fd?: 1 | 2;
}

/**
 * The logger: JSON lines on stdout for journald, each line that matters carrying an `event` name
 * (e.g. `sync.run.finished`). Every line passes through redaction before it is written, so a secret
 * or a personal field cannot reach the journal whatever a caller logs.
 */
export function createLogger(options: LogOptions = {}): Logger {
  const fd = options.fd ?? 1;
  const tty = fd === 1 ? process.stdout.isTTY : process.stderr.isTTY;
  const pretty = options.pretty ?? (options.destination === undefined && tty === true);
  const base = {
    level: options.level ?? 'info',
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    messageKey: 'msg',
    formatters: {
      level: (label: string) => ({ level: label }),
      log: (object: Record<string, unknown>) => redactDeep(object) as Record<string, unknown>,
    },
    hooks: {
      // Messages are strings the formatter does not see; scrub them too.
      logMethod(this: Logger, args: unknown[], method: (...a: unknown[]) => void) {
        method.apply(
          this,
          args.map((a) => (typeof a === 'string' ? scrubText(a) : a)),
        );
      },
    },
    serializers: { err: (err: unknown) => redactDeep(err) },
  };
  if (options.destination) return pino(base, options.destination);
  if (pretty) {
    return pino({
      ...base,
      transport: {
        target: 'pino-pretty',
        options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l', destination: fd },
      },
    });
  }
  return pino(base, pino.destination({ fd, sync: fd === 2 }));
}

/** A logger that writes nothing, for tests and library use. */
export const silentLogger: Logger = pino({ level: 'silent' });
