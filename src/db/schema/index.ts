export * from './deliveries.js';
export * from './inbox.js';
export * from './mirror.js';
export * from './outbox.js';
export * from './replicas.js';
export * from './sync.js';
