/** The signals that ask a process of ours to stop gracefully. */
export const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM'];

/** What {@link onStopSignals} calls. */
export interface StopSignalHandlers {
  /** The first SIGINT or SIGTERM: begin the graceful stop. */
  stop(signal: NodeJS.Signals): void;
  /** Every later one, while the stop runs: say so, nothing else (default: ignored). */
  repeated?(signal: NodeJS.Signals, count: number): void;
}

/**
 * Starts a graceful stop on the first SIGINT or SIGTERM and keeps listening afterwards, so that
 * repeats cannot kill the process half-way through it. A repeat is the normal case, not a user's
 * impatience: Ctrl-C signals the terminal's whole process group, so under `npm run` + tsx the
 * daemon gets the terminal's SIGINT and then each wrapper's relayed copy. With `process.once` the
 * second one met no listener and Node's default (or tsx's, which exits 130 when the process has
 * none) killed it mid-stop, leaving rows `sending`/`accepted`. Returns the function that removes
 * the listeners (for callers that stop by other means, such as tests); a CLI process keeps them
 * until it exits.
 */
export function onStopSignals(handlers: StopSignalHandlers): () => void {
  let count = 0;
  const listener = (signal: NodeJS.Signals) => {
    count += 1;
    if (count === 1) handlers.stop(signal);
    else handlers.repeated?.(signal, count);
  };
  for (const signal of STOP_SIGNALS) process.on(signal, listener);
  return () => {
    for (const signal of STOP_SIGNALS) process.off(signal, listener);
  };
}
