/**
 * The state shared by the simulator's route modules, and the Hono environment type (node
 * bindings give handlers the raw request/response, which lists and transport faults need).
 */
import type { HttpBindings } from '@hono/node-server';
import type { AuthMode } from './auth.js';
import type { Books } from './books.js';
import type { FaultControl } from './faultInjection.js';
import type { RequestRateLimit } from './rateLimit.js';
import type { Registry } from './registry.js';
import type { Stats } from './stats.js';
import type { WebhookSender } from './webhooks.js';

export type SimEnv = { Bindings: HttpBindings };

export interface ReceivedNotification {
  /** 1-based order of arrival. */
  seq: number;
  receivedAt: string;
  /** Request headers without credentials (apikey, authorization, cookie). */
  headers: Record<string, string>;
  /** Parsed JSON body, or the raw text when it was not JSON. */
  body: unknown;
  /** marketplaceTransactionRef when the body had one as a string. */
  ref?: string;
  /** The status answered, or 'reset' / 'truncated' for transport faults. */
  status: number | string;
}

/** Settings that can change while running (POST /_sim/auth rotates the key). */
export interface Settings {
  auth: AuthMode;
  apiKey: string;
  maxPageSize: number;
  defaultPageSize: number;
  unitsUnpaginated: boolean;
  projectsUnpaginated: boolean;
  issuanceDataPath: string;
  unitsDataPath: string;
  notifyStatus: 200 | 202;
}

export interface SimState {
  settings: Settings;
  registry: Registry;
  /** What approved reports change in the registry, and the faults of those books. */
  books: Books;
  faults: FaultControl;
  webhooks: WebhookSender;
  stats: Stats;
  notifications: ReceivedNotification[];
  /** The operator's request rate limit over every interface request; none when unset. */
  rateLimit?: RequestRateLimit | undefined;
}
