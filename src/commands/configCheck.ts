import { type Config, maskedConfig } from '../config/config.js';
import { printedDatabase } from '../config/configDatabase.js';
import { configNotes, requireSettings } from '../config/configNeeds.js';

/**
 * `vcu-sync config check`: the file and environment were valid (loading them checked), and nothing
 * `vcu-sync run` needs is missing (else exit 78, one line per missing setting); prints the
 * configuration with secrets masked, then a note per setting that leaves a part idle.
 */
export async function runConfigCheck(config: Config): Promise<number> {
  requireSettings(config, 'run');
  process.stdout.write(`${JSON.stringify(printedConfig(config), null, 2)}\n`);
  for (const note of configNotes(config)) process.stderr.write(`vcu-sync: note: ${note}\n`);
  process.stderr.write('vcu-sync: configuration is valid\n');
  return 0;
}

/** What `config check` prints: the configuration with secrets masked. */
export function printedConfig(config: Config): unknown {
  return { ...maskedConfig(config), database: printedDatabase(config.database) };
}
