import { readFileSync } from 'node:fs';

function readVersion(): string {
  // src/ and dist/ both sit one level below package.json.
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version?: string;
  };
  return pkg.version ?? 'unknown';
}

/** The package version (package.json), read once: `vcu-sync --version`, status, metrics. */
export const VERSION = readVersion();
