// Preloaded with `node --import`: prints the process's peak RSS (KiB) on stderr as it exits.
import { writeSync } from 'node:fs';

process.on('exit', () => {
  writeSync(2, `\nBENCH_MAXRSS_KB=${process.resourceUsage().maxRSS}\n`);
});
