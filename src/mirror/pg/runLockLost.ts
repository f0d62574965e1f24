/** A run lost its advisory lock: the connection holding it ended (the lost-lock signal's reason, the fence's error). */
export class RunLockLost extends Error {
  constructor() {
    super('the database connection holding the run lock ended; the next run resumes from the checkpoint');
    this.name = 'RunLockLost';
  }
}
