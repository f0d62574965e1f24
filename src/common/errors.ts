/**
 * An error caused by what the user gave us (a config key, a file, a flag, a request body).
 * The CLI prints its message as one line, without a stack trace, and exits with `exitCode`.
 */
export class UserError extends Error {
  /** Process exit code for the CLI (default: 1). */
  readonly exitCode: number;

  constructor(message: string, exitCode = 1) {
    super(message);
    this.name = 'UserError';
    this.exitCode = exitCode;
  }
}

/** A refused steering request: `not-found` (404) or `conflict` (409), with a sentence saying why. */
export class SteerError extends UserError {
  constructor(
    readonly code: 'not-found' | 'conflict' | 'invalid',
    message: string,
  ) {
    super(message, code === 'not-found' ? 3 : 1);
    this.name = 'SteerError';
  }
}

/** Exit code for configuration problems (sysexits EX_CONFIG). */
export const EXIT_CONFIG = 78;

/** A configuration problem; the message lists every problem found, each naming its key. */
export class ConfigError extends UserError {
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(
      problems.length === 1
        ? `config: ${problems[0]}`
        : `config: ${problems.length} problems: ${problems.join('; ')}`,
      EXIT_CONFIG,
    );
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** The message of anything thrown, for logs and one-line CLI output. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
