/**
 * Resolves when `wait` does or as soon as `signal` aborts, whichever is first, and unlinks its
 * listener either way (a long-lived signal must not collect one per wait): a stop never waits out
 * a backoff.
 */
export function untilAborted(wait: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return wait;
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      signal.removeEventListener('abort', done);
      resolve();
    };
    signal.addEventListener('abort', done, { once: true });
    void wait.then(done, done);
  });
}
