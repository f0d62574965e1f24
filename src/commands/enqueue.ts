import { readFileSync } from 'node:fs';
import type { OutboxAccess } from '../outbox/access.js';
import { toEntry } from '../outbox/entry.js';
import { type CommandStreams, commandOutput } from './commandOutput.js';

/** Where `vcu-sync enqueue` reads and writes (the stored entry on stdout, refusals on stderr). */
export interface EnqueueCommandOptions extends CommandStreams {
  /** Read when the file is "-" (default: process.stdin). */
  stdin?: NodeJS.ReadableStream;
}

/** Exit code for input that is not a valid notification (sysexits EX_DATAERR). */
export const EXIT_INVALID = 65;

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * `vcu-sync enqueue FILE|-`: queues one notification (a JSON object) and prints the stored entry
 * as JSON (personal fields masked). Exit 0 when queued or already queued with the same body, 1
 * when the ref is taken by another body, 65 when the input is not a valid notification (every
 * field error printed, one per line).
 */
export async function runEnqueueCommand(
  outbox: OutboxAccess,
  fileOrDash: string,
  opts: EnqueueCommandOptions = {},
): Promise<number> {
  const { stderr, printJson } = commandOutput(opts);
  const source = fileOrDash === '-' ? 'standard input' : fileOrDash;
  let text: string;
  try {
    text = fileOrDash === '-' ? await readAll(opts.stdin ?? process.stdin) : readFileSync(fileOrDash, 'utf8');
  } catch (err) {
    stderr.write(`vcu-sync: cannot read ${source} (${(err as NodeJS.ErrnoException).code ?? 'error'})\n`);
    return EXIT_INVALID;
  }
  let input: unknown;
  try {
    input = JSON.parse(text);
  } catch {
    stderr.write(`vcu-sync: ${source} is not valid JSON\n`);
    return EXIT_INVALID;
  }
  const result = await outbox.enqueue(input);
  if (result.status === 422) {
    stderr.write(
      `vcu-sync: ${source}: notification is invalid (${result.errors.length} problem${result.errors.length > 1 ? 's' : ''})\n`,
    );
    for (const e of result.errors) stderr.write(`  ${e.field}: ${e.reason}\n`);
    return EXIT_INVALID;
  }
  if (result.status === 409) {
    stderr.write(`vcu-sync: ${result.message}\n`);
    return 1;
  }
  printJson(toEntry(result.row));
  return 0;
}
