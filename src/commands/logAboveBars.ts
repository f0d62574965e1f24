import type { MultiBar } from 'cli-progress';
import { createLogger, type Logger } from '../common/log.js';
import type { Config } from '../config/config.js';

/**
 * `vcu-sync sync` on a terminal: log lines and progress bars share stderr. A line written while the
 * bars are drawn lands in the middle of them and the next redraw overwrites it; so while bars are
 * shown, each log line goes through the bars' own log buffer, which prints it above them at their
 * next redraw, and once they stop, straight to the stream again.
 */
export class LogAboveBars {
  private bars: Pick<MultiBar, 'log' | 'update'> | undefined;

  constructor(
    private readonly stream: Pick<NodeJS.WritableStream, 'write'>,
    private readonly format: (line: string) => string = (line) => line,
  ) {}

  /** pino's destination: one JSON line per call. */
  write(line: string): boolean {
    const text = this.format(line);
    if (this.bars) this.bars.log(text.endsWith('\n') ? text : `${text}\n`);
    else this.stream.write(text);
    return true;
  }

  /** Bars are drawn from now on: lines go above them. */
  attach(bars: Pick<MultiBar, 'log' | 'update'>): void {
    this.bars = bars;
  }

  /**
   * Call before the bars stop: a last redraw prints the lines logged since the previous one (the
   * bars' stop() does not), then lines go to the stream again.
   */
  detach(): void {
    this.bars?.update();
    this.bars = undefined;
  }
}

/**
 * The logger of a one-shot `sync`: on a terminal, readable lines routed by a {@link LogAboveBars}
 * (returned, for the bars to attach to); otherwise JSON lines on stderr, as every command logs.
 */
export async function syncLogger(
  config: Pick<Config, 'log'>,
  stderr: NodeJS.WriteStream = process.stderr,
): Promise<{ log: Logger; aboveBars: LogAboveBars | undefined }> {
  if (stderr.isTTY !== true)
    return { log: createLogger({ level: config.log.level, fd: 2 }), aboveBars: undefined };
  // Loaded only for a terminal, as createLogger's pretty transport is.
  const { prettyFactory } = await import('pino-pretty');
  const pretty = prettyFactory({ colorize: true, translateTime: 'SYS:HH:MM:ss.l' });
  const aboveBars = new LogAboveBars(stderr, (line) => pretty(line) ?? line);
  return { log: createLogger({ level: config.log.level, destination: aboveBars }), aboveBars };
}
