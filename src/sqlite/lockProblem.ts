import path from 'node:path';
import { UserError } from '../common/errors.js';

/**
 * A lock file that cannot be created or written names the folder to fix and the key that chose it,
 * not only a file the user never configured (pure).
 */
export function lockFileProblem(lockPath: string, err: unknown, otherwise: string): UserError {
  const code = String((err as { code?: unknown }).code ?? '');
  if (/^(SQLITE_CANTOPEN|SQLITE_READONLY|SQLITE_PERM|SQLITE_AUTH|EACCES|EPERM|EROFS)/.test(code)) {
    return new UserError(
      `database: cannot write in the database's directory ${path.dirname(lockPath)} (the daemon keeps its lock file ${path.basename(lockPath)} there, beside database.path): check the directory's owner and mode for the service user, or set database.path / VCU_SYNC_DB to a writable place`,
    );
  }
  return new UserError(`database: ${otherwise}: ${(err as Error).message}`);
}
