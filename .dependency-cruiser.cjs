// The import rules of src/ (issue 27, "effects flow down"), checked by `npm run depcheck` (part of
// `npm run lint`, so CI fails on a violation). Each rule says why it exists. A path in a rule is a
// regular expression over the file's path from the repository root ("src/outbox/hooks.ts").

/**
 * The composition roots: they wire the daemon (and each worker thread, src/app/) from every part,
 * so they may import anything. Nothing below them imports them back (rule no-import-of-roots).
 */
const ROOTS = ['^src/cli\\.ts$', '^src/commands/', '^src/app/'];

/**
 * The parts below the effects: they change state, and learn nothing of who is told about it.
 * A state change reaches the subscribers' deliveries through a sink the root hands to the stores
 * (src/operations/effects.ts), never by an import upward.
 */
const LOWER = [
  '^src/db/',
  '^src/operations/',
  '^src/outbox/',
  '^src/inbox/',
  '^src/thread/',
  '^src/context\\.ts$',
];

/**
 * Where a database may be named (issue 27, "the database chosen once"): the schema (src/db/), the two
 * adapters (src/sqlite/, src/postgres/) and the factories that pick one (src/app/). Everything else
 * reaches the database through the store port (src/store/ and the seams the factories build).
 */
const DATABASE_HOMES = ['^src/db/', '^src/sqlite/', '^src/postgres/', '^src/app/'];

module.exports = {
  forbidden: [
    {
      name: 'database-named-in-its-homes',
      severity: 'error',
      comment:
        'Only the schema, the two adapters and their factories import a database driver or an adapter: ' +
        'code elsewhere asks the store port what it can do (capabilities), never which database it is, ' +
        'so a rule is written once and a fault path tested on one store runs on the other.',
      from: { path: '^src/', pathNot: DATABASE_HOMES },
      to: {
        path: [
          '^src/sqlite/',
          '^src/postgres/',
          '^node_modules/(pg|pg-[a-z-]+|better-sqlite3)/',
          '^node_modules/drizzle-orm/(better-sqlite3|node-postgres|sqlite-core|pg-core)/',
        ],
      },
    },
    {
      name: 'no-circular',
      severity: 'error',
      comment:
        'No module imports itself through others: a cycle makes the load order decide what is undefined at ' +
        'import time, and ties the modules so that neither can be understood or tested alone.',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'no-folder-cycle',
      severity: 'error',
      scope: 'folder',
      comment:
        'No cycle between folders of src/: each folder is a layer that may use those below it, and a cycle ' +
        'means two folders are one part in two places (issue 27 found one through 11 of them). ' +
        "dependency-cruiser's folders do not see the two loose files at src/'s root (cli.ts, context.ts): " +
        'rules no-import-of-roots and context-hub-* keep those out of cycles.',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'effects-flow-down-subscribers',
      severity: 'error',
      comment:
        'Only the composition roots wire the subscribers (src/subscribers/) in; besides them, the API ' +
        "(its /v1/deliveries routes and schemas) and health (status reads the deliveries' backlog) read " +
        'them from above. The stores, the outbox, the inbox, the threads and the context never import ' +
        'them: a state change reaches the deliveries through the sink the root hands the stores.',
      from: {
        path: '^src/',
        pathNot: [...ROOTS, '^src/subscribers/', '^src/api/', '^src/health/'],
      },
      to: { path: '^src/subscribers/' },
    },
    {
      name: 'effects-flow-down-feed',
      severity: 'error',
      comment:
        'Only the composition roots wire the change feed (src/feed/) in; the API serves it (feed routes, ' +
        'and the mirror schema that shares its query shape): the API sits above the feed. The stores write ' +
        "the feed's rows through db/changes.ts and db/pgChanges.ts, never through feed/.",
      from: { path: '^src/', pathNot: [...ROOTS, '^src/feed/', '^src/api/'] },
      to: { path: '^src/feed/' },
    },
    {
      name: 'lower-layers-do-not-read-health',
      severity: 'error',
      comment:
        'health/ reads every store to judge the daemon, so it sits above them: the layers it reads never ' +
        'import it back (the identity and lease-owner helpers they needed live in src/common/leaseOwner.ts).',
      from: { path: LOWER },
      to: { path: '^src/health/' },
    },
    {
      name: 'no-import-of-roots',
      severity: 'error',
      comment:
        'The composition roots (and src/app/) are imported only by the roots: anything below that imports ' +
        'one imports the whole daemon, and closes a cycle through every part.',
      from: { path: '^src/', pathNot: ROOTS },
      to: { path: ROOTS },
    },
    {
      name: 'foundations-are-leaves',
      severity: 'error',
      comment:
        'src/common/ holds the helpers every folder may use (clock, errors, log, redaction, backoff...): ' +
        'it imports no other folder of src/, so every folder can import it without a cycle.',
      from: { path: '^src/common/' },
      to: { path: '^src/', pathNot: ['^src/common/'] },
    },
    {
      name: 'config-http-process-need-only-common',
      severity: 'error',
      comment:
        "The configuration (src/config/), the HTTP helpers (src/http/) and the process's own concerns " +
        '(src/process/: signals, heap sizing, sd_notify, worker start) sit just above src/common/ and ' +
        'import nothing else of src/: the parts above use them, never the other way round.',
      from: { path: ['^src/config/', '^src/http/', '^src/process/'] },
      to: { path: '^src/', pathNot: ['^src/common/', '^src/config/', '^src/http/', '^src/process/'] },
    },
    {
      name: 'context-hub-needs',
      severity: 'error',
      comment:
        'context.ts, the services every part is handed, may reach into operator/ (it makes the operator ' +
        'client), config/ and common/ only: it holds services, never a store (the factories in src/app/ ' +
        'open the store).',
      from: { path: '^src/context\\.ts$' },
      to: { path: '^src/[^/]+/', pathNot: ['^src/operator/', '^src/config/', '^src/common/'] },
    },
    {
      name: 'context-hub-one-way',
      severity: 'error',
      comment:
        'What context.ts builds on never imports it back (a cycle through the hub, which no-folder-cycle ' +
        'does not see: context.ts is a loose file at src/).',
      from: {
        path: [
          '^src/db/',
          '^src/operator/',
          '^src/config/',
          '^src/common/',
          '^src/http/',
          '^src/process/',
          '^src/operations/effects\\.ts$',
        ],
      },
      to: { path: '^src/context\\.ts$' },
    },
  ],
  options: {
    // Type-only imports count: a type imported upward ties the layers as much as a value.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    // The rules are about src/; what it imports from packages is npm's business.
    exclude: { path: '^dist/' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
    skipAnalysisNotInRules: true,
    reporterOptions: { text: { highlightFocused: true } },
  },
};
