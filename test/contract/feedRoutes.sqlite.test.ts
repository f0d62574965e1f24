import { feedRoutesCases } from './feedRoutes.cases.js';
import { sqliteFeed } from './feedStores.js';

/** The feed routes' contract on SQLite, the test context's file per case: no PostgreSQL needed. */

feedRoutesCases('SQLite', sqliteFeed);
