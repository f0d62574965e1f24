// Preloaded with `node --import`: prints the process's peak RSS (KiB) on stderr as it exits.
//
// On Linux the figure is VmHWM, the peak of this process's own memory since its exec. getrusage's
// maxRSS is not: a child's starts at its parent's RSS when it was forked, and Linux keeps it
// across exec, so a bench harness grown to 119 MB made `node -e ''` read 119 MB (a full
// `npm run bench`, docs/benchmarks.md). Elsewhere, maxRSS.
import { readFileSync, writeSync } from 'node:fs';

function peakKib() {
  try {
    const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
    if (hwm) return Number(hwm[1]);
  } catch {
    // No /proc: not Linux.
  }
  return process.resourceUsage().maxRSS;
}

process.on('exit', () => {
  writeSync(2, `\nBENCH_MAXRSS_KB=${peakKib()}\n`);
});
