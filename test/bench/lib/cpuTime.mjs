// Preloaded with `node --import`: prints the process's CPU time (user + system, µs) on stderr as it
// exits, so a figure taken on a shared, loaded host can be read beside the wall-clock one.
import { writeSync } from 'node:fs';

process.on('exit', () => {
  const { userCPUTime, systemCPUTime } = process.resourceUsage();
  writeSync(2, `\nBENCH_CPU_US=${userCPUTime + systemCPUTime}\n`);
});
