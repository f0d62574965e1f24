import { reconcileDaemonCases } from './reconcileDaemon.cases.js';
import { sqliteReconcile } from './reconcileDaemonStores.js';

reconcileDaemonCases('sqlite', async () => sqliteReconcile());
