/**
 * Turn-taking at SQLite's one write lock between the threads of one daemon. The API's group commit
 * (main thread) must never wait long behind the mirror's bulk writes (sync thread): a held commit of
 * 10,000 unit operations holds the lock for a few hundred milliseconds, and an enqueue waiting that
 * long misses its latency target by two orders of magnitude. So a commit queue that finds the lock
 * held says so here ({@link arrive}); a bulk writer looks between records ({@link yieldRequested}),
 * commits what it has written so far and waits for the waiter to take its turn ({@link waitTurn})
 * before it goes on. The bulk writer loses nothing by it: its checkpoint still commits only with the
 * data before it (store.ts), and rows written ahead of their checkpoint are what a re-sync finds
 * anyway.
 *
 * One counter in a SharedArrayBuffer, shared by every thread of the process (the main thread makes
 * it; workers get it in their settings and {@link useWriterGate} it): how many commit queues are
 * waiting for the lock now. Lock-free and a few nanoseconds a look.
 */

let shared = new Int32Array(new SharedArrayBuffer(4));
/**
 * How many of the waiters are this thread's own: a bulk writer never stands aside for them (they
 * cannot take the lock while it blocks their thread).
 */
let mine = 0;

/** The buffer to hand a worker thread, so it shares this thread's gate. */
export function writerGateBuffer(): SharedArrayBuffer {
  return shared.buffer as SharedArrayBuffer;
}

/** In a worker: use the gate of the thread that started it. */
export function useWriterGate(buffer: SharedArrayBuffer): void {
  shared = new Int32Array(buffer);
}

/** A commit queue found the lock held and is waiting for it. */
export function arrive(): void {
  mine++;
  Atomics.add(shared, 0, 1);
}

/** A waiting commit queue took the lock (or gave up waiting): wakes a bulk writer waiting its turn. */
export function leave(): void {
  mine--;
  Atomics.sub(shared, 0, 1);
  Atomics.notify(shared, 0);
}

/** Whether a commit queue of another thread is waiting for the lock now. */
export function yieldRequested(): boolean {
  return Atomics.load(shared, 0) - mine > 0;
}

/**
 * Blocks this thread until no other thread's commit queue waits (or `maxMs` passed), after the bulk
 * writer has committed what it wrote. The wait is a millisecond or so: the waiter retries that often.
 */
export function waitTurn(maxMs: number): void {
  const deadline = Date.now() + maxMs;
  for (let n = Atomics.load(shared, 0); n - mine > 0; n = Atomics.load(shared, 0)) {
    const left = deadline - Date.now();
    if (left <= 0) return;
    Atomics.wait(shared, 0, n, left);
  }
}
