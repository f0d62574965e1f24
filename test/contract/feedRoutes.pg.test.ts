import { useTestPgDatabase } from '../helpers/pgDatabase.js';
import { feedRoutesCases } from './feedRoutes.cases.js';
import { pgFeed } from './feedStores.js';

/** The feed routes' contract on PostgreSQL, the file's database shared by its cases. */

const pg = useTestPgDatabase();

feedRoutesCases(
  'PostgreSQL',
  pgFeed(() => pg.database),
);
