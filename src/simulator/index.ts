/**
 * The operator simulator: a real HTTP server serving the whole operator interface (lists, custody
 * data reads, /notify), sending signed decision and deposit webhooks, and injecting faults, so
 * tests, the demo and benchmarks need no real operator. See docs/operator.md, "The operator simulator".
 */
export type { AuthMode } from './auth.js';
export {
  BOOKS_VIEW_LIMIT,
  type BookingOutcome,
  type BookingPlan,
  Books,
  type BooksPatch,
  type BooksView,
  booksPatchSchema,
  planBooking,
} from './books.js';
export { parseSimulatorArgs, runSimulatorCli } from './cli.js';
export type { ReceivedNotification, Settings, SimState } from './context.js';
export {
  type DriftChange,
  DriftControl,
  type DriftSpec,
  type DriftView,
  driftSpecSchema,
  uuidOfKey,
} from './drift.js';
export {
  FAULT_KINDS,
  type Fault,
  FaultControl,
  type FaultKind,
  type FaultOptions,
  type FaultRates,
  type InjectedFault,
} from './faultInjection.js';
export { KEY_SPECS } from './generate.js';
export { Registry, RegistryError, type RegistryOptions } from './registry.js';
export { type Simulator, type SimulatorOptions, startSimulator } from './server.js';
export type { StatsSnapshot } from './stats.js';
export { Stats } from './stats.js';
export {
  ID_FIELD,
  type Issuance,
  type JsonObject,
  type Project,
  RESOURCES,
  type ResourceName,
  type UnitOperation,
} from './types.js';
export {
  DEFAULT_WEBHOOK_SECRET,
  type Decision,
  REJECT_REASON,
  type SentWebhook,
  type WebhookConfig,
  type WebhookPolicy,
  WebhookSender,
} from './webhooks.js';
