/**
 * The Node.js lines vcu-sync runs on. better-sqlite3 13 (the SQLite driver) needs Node 22 or later:
 * on Node 20 it crashes at the first query, and better-sqlite3 12 (the last that loads on Node 20)
 * aborts the process at random on Node 24.19+ when an idle GC finalizes a statement. So below 22
 * the CLI refuses to start with one line, before anything touches the database.
 */

/** The oldest Node major vcu-sync supports (default: 22, as package.json `engines`). */
export const MIN_NODE_MAJOR = 22;

/** The reason this Node version cannot run vcu-sync, or undefined when it can. */
export function unsupportedNodeReason(version: string, execPath = ''): string | undefined {
  const match = /^v?(\d+)\.\d+\.\d+/.exec(version);
  if (!match)
    return `cannot read the Node.js version "${version}"; vcu-sync needs Node ${MIN_NODE_MAJOR} or later`;
  const major = Number(match[1]);
  if (major >= MIN_NODE_MAJOR) return undefined;
  const where = execPath ? ` (${execPath})` : '';
  return (
    `Node.js ${version}${where} is too old: vcu-sync needs Node ${MIN_NODE_MAJOR} or 24 LTS. ` +
    'Run it with the Node that `npm ci` installs (node_modules/.bin/node) or install Node 24.'
  );
}
