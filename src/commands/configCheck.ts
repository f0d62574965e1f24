import { type Config, maskedConfig } from '../config.js';

/** `vcu-sync config check`: the configuration was valid (loading it checked); print it masked. */
export async function runConfigCheck(config: Config): Promise<number> {
  process.stdout.write(`${JSON.stringify(maskedConfig(config), null, 2)}\n`);
  process.stderr.write('vcu-sync: configuration is valid\n');
  return 0;
}
