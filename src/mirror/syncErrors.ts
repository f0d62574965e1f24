/** Thrown between pages when the run was asked to stop; the checkpoint is kept. */
export class RunAborted extends Error {
  constructor() {
    super('stopped before the run finished; the next run resumes from the checkpoint');
    this.name = 'RunAborted';
  }
}

/** The incremental window no longer matches the mirror: the run falls back to a full scan. */
export class OverlapMismatch extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OverlapMismatch';
  }
}
