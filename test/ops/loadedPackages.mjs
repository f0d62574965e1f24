// Preloaded with NODE_OPTIONS=--import: prints, as the process exits, every npm package it loaded.
import { writeSync } from 'node:fs';
import { registerHooks } from 'node:module';

const packages = new Set();
registerHooks({
  load(url, context, next) {
    const m = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\//);
    if (m && m[1] !== 'tsx') packages.add(m[1]);
    return next(url, context);
  },
});
process.on('exit', () => writeSync(2, `\nLOADED_PACKAGES=${[...packages].sort().join(',')}\n`));
