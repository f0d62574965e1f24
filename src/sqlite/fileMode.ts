import { chmodSync, closeSync, constants, openSync } from 'node:fs';

/**
 * The mode of files holding operations and personal data (the database, its WAL and shared memory,
 * backups), given the process umask (pure). Owner only (0600), unless the umask already denies
 * others everything, as the unit's UMask=0027 does: then whoever set it chose a group of readers,
 * who get read access (0640 under 0027).
 */
export function privateFileMode(umask: number): number {
  if ((umask & 0o007) === 0o007) return 0o640 & ~umask;
  return 0o600;
}

/** The mode for a new private file in this process. */
export function currentPrivateFileMode(): number {
  // Reading the umask without changing it: process.umask() with no argument is the only portable way.
  return privateFileMode(process.umask());
}

/**
 * Creates `file` empty with the private mode, if it does not exist yet; returns whether it did.
 * SQLite then opens it as an empty database, and gives the -wal and -shm files it creates beside it
 * the same mode as the database file, so one chmod here covers all three.
 */
export function createPrivateFile(file: string): boolean {
  const mode = currentPrivateFileMode();
  let fd: number;
  try {
    fd = openSync(file, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, mode);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
  closeSync(fd);
  // open() applies the umask to the mode; chmod does not, so the file has exactly the mode chosen.
  chmodSync(file, mode);
  return true;
}
