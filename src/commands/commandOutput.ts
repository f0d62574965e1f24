/** Where a command prints; tests pass their own. */
export interface CommandStreams {
  /** Where the answer is printed (default: process.stdout). */
  stdout?: NodeJS.WritableStream;
  /** Where refusals and errors are printed (default: process.stderr). */
  stderr?: NodeJS.WritableStream;
}

/** A command's streams with their defaults, and `printJson` for an answer printed as indented JSON. */
export function commandOutput(opts: CommandStreams): {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  printJson: (value: unknown) => void;
} {
  const stdout = opts.stdout ?? process.stdout;
  return {
    stdout,
    stderr: opts.stderr ?? process.stderr,
    printJson: (value) => {
      stdout.write(`${JSON.stringify(value, null, 2)}\n`);
    },
  };
}
