#!/usr/bin/env node
// The installed command: runs the compiled CLI (npm ci builds dist/ through the prepare script).
import('../dist/cli.js').then(
  (cli) => cli.runAsProcess(),
  (err) => {
    if (err && err.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes('dist/cli.js')) {
      process.stderr.write(
        'vcu-sync: not built yet; run `npm run build` (or `npm ci`) in the install folder\n',
      );
      process.exit(70);
    }
    throw err;
  },
);
