import type { Sqlite } from './open.js';

/**
 * One value per database handle, made on first use and kept as long as the handle lives: how every
 * module keeps its prepared statements (and other per-connection state) without a global cache or
 * passing them around. `perHandle(prepareAll)` returns the accessor `(sqlite) => statements`.
 */
export function perHandle<T>(make: (sqlite: Sqlite) => T): (sqlite: Sqlite) => T {
  const made = new WeakMap<Sqlite, T>();
  return (sqlite) => {
    let value = made.get(sqlite);
    if (value === undefined) {
      value = make(sqlite);
      made.set(sqlite, value);
    }
    return value;
  };
}
