/**
 * Every table, written once as a function of a dialect's column kinds (kinds.ts): sqlite.ts and
 * postgres.ts build their drizzle tables from these, so the two schemas cannot drift apart.
 */
export * from './deliveries.js';
export * from './inbox.js';
export * from './mirror.js';
export * from './outbox.js';
export * from './reconcile.js';
export * from './replicas.js';
export * from './sync.js';
