// Preloaded with NODE_OPTIONS=--import: prints, as the process exits, every npm package it loaded
// and the node flags it ran under.
import { writeSync } from 'node:fs';
import { registerHooks } from 'node:module';

const packages = new Set();
const note = (url) => {
  const m = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\//);
  if (m && m[1] !== 'tsx') packages.add(m[1]);
};
registerHooks({
  // Resolution too: under tsx, a require() of a .cjs file is read by tsx's own loader and never
  // reaches the load hook (drizzle-orm's migrator is require()d so).
  resolve(specifier, context, next) {
    const resolved = next(specifier, context);
    note(resolved.url);
    return resolved;
  },
  load(url, context, next) {
    note(url);
    return next(url, context);
  },
});
process.on('exit', () => {
  writeSync(2, `\nLOADED_PACKAGES=${[...packages].sort().join(',')}\n`);
  writeSync(2, `EXEC_ARGV=${JSON.stringify(process.execArgv)}\n`);
});
