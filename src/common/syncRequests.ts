/** The mirror's request line: what a sync can be asked for, by whom, and the one way to ask. */

/** The resources a sync can be asked for, as the CLI and the API name them. */
export type SyncTarget = 'projects' | 'issuances' | 'units' | 'custody';
export const SYNC_TARGETS: readonly SyncTarget[] = ['projects', 'issuances', 'units', 'custody'];

/** What started a sync run. */
export type SyncTrigger = 'startup' | 'schedule' | 'manual' | 'api' | 'webhook';

/**
 * How a loop asks the mirror for a sync: resolves true once the runs are scheduled, false when no
 * scheduler serves requests in this process (a CLI command, a test without one, or after a stop).
 */
export type RequestSync = (targets: readonly SyncTarget[], trigger: SyncTrigger) => Promise<boolean>;

/**
 * The one line between the mirror scheduler and the loops that ask it for syncs (the API's
 * `POST /v1/sync`, a custody deposit webhook, an accepted Tokenization). app/daemon.ts makes one, hands
 * `request` to the asking loops and the object to the mirror, which serves it while it runs; the
 * loops never import each other.
 */
export class SyncRequests {
  private handler: ((targets: readonly SyncTarget[], trigger: SyncTrigger) => void) | null = null;

  /** Serves requests with `handler` until the returned function is called. */
  serve(handler: (targets: readonly SyncTarget[], trigger: SyncTrigger) => void): () => void {
    this.handler = handler;
    return () => {
      if (this.handler === handler) this.handler = null;
    };
  }

  /** Asks for syncs; false when nothing serves them now. */
  readonly request: RequestSync = async (targets, trigger) => {
    if (!this.handler) return false;
    this.handler(targets, trigger);
    return true;
  };
}
