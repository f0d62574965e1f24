import { validateDetailed } from 'node-cron';
import { z } from 'zod';
import { canonicalWord } from '../common/words.js';
import { databaseSchema } from './configDatabase.js';
import { apiPath, hostPort, httpUrl, nonNegativeInt, positiveInt } from './configPrimitives.js';
import { reconcileSchema } from './configReconcile.js';
import { schemaDriftSchema } from './configShape.js';
import { subscriberDeliverySchema, subscriberSchema } from './configSubscribers.js';

export { SUBSCRIBER_EVENTS } from './configSubscribers.js';

/**
 * The configuration, as the TOML file spells it (snake_case keys). Every key has a default, and
 * config/vcu-sync.example.toml documents each one; keep the two in step.
 * Secrets (`operator.api_key`, `api.token`, `webhook.secrets`, `database.url`) are better given through
 * `*_FILE` variables or systemd credentials than written in the file.
 */

/** A cron expression for node-cron (five or six fields), or "off". */
const cron = z.string().superRefine((value, ctx) => {
  if (value === 'off') return;
  const result = validateDetailed(value);
  if (!result.valid) {
    const first = result.errors[0];
    ctx.addIssue({
      code: 'custom',
      message: `not a cron expression${first ? ` (${first.field}: ${first.message})` : ''}; use e.g. "*/5 * * * *" or "off"`,
    });
  }
});

const operatorSchema = z.strictObject({
  /** The operator's base URL (default: none; required to sync or send). */
  url: httpUrl.optional(),
  /** The operator API key (default: none). Prefer VCU_SYNC_API_KEY_FILE or the `api-key` credential. */
  api_key: z.string().min(1).optional(),
  /** How the API key is sent: `apikey` header (Part A) or `Authorization: Bearer` (Part B) (default: "apikey"). */
  auth: z.enum(['apikey', 'bearer']).default('apikey'),
  /** Whether /notify carries the API key too (default: true). */
  auth_on_notify: z.boolean().default(true),
  /** This marketplace's marketplaceId, filled into notifications that omit it (default: none). */
  marketplace_id: z.string().min(1).optional(),
  /** Whole-request timeout in milliseconds (default: 30000). */
  timeout_ms: positiveInt.default(30_000),
  /** Timeout to connect, in milliseconds (default: 5000). */
  connect_timeout_ms: positiveInt.default(5_000),
  /** Most requests per second sent to the operator, all loops and threads of the process together (each replica has its own): the adaptive rate starts here, halves on a 429 and climbs back (default: 10). */
  rate_per_second: z.number().positive().default(10),
  /** Least requests per second a run of 429s may bring the adaptive rate to (capped at rate_per_second) (default: 0.5). */
  min_rate_per_second: z.number().positive().default(0.5),
  /** Requests per second the adaptive rate climbs by per second of successful requests (default: 1). */
  rate_increase_per_second: z.number().positive().default(1),
  /** List bodies up to this size are parsed at once; larger ones are streamed record by record, bytes (default: 2097152). */
  max_body_bytes: positiveInt.default(2 * 1024 * 1024),
  /** Largest record, decompressed: a Marketplace Data answer or one list element; a larger one is quarantined, bytes (default: 1048576). */
  max_record_bytes: positiveInt.default(1024 * 1024),
  /** Deepest nesting of objects and arrays in one record; a deeper one is quarantined (default: 64). */
  max_depth: positiveInt.default(64),
  /** Most of a /notify answer read and stored, decompressed; the rest is dropped and the stored text says so, bytes (default: 1048576). */
  max_response_bytes: positiveInt.default(1024 * 1024),
  /** getProjectList path (default: "/integration/v1/projects"). */
  projects_path: apiPath.default('/integration/v1/projects'),
  /** getIssuanceList path (default: "/integration/v1/issuances"). */
  issuances_path: apiPath.default('/integration/v1/issuances'),
  /** getUnitList path (default: "/integration/v1/units"). */
  units_path: apiPath.default('/integration/v1/units'),
  /** getProjectData path, `{id}` replaced (default: "/integration/v1/projects/{id}"). */
  project_data_path: apiPath.default('/integration/v1/projects/{id}'),
  /** getIssuanceData path, not published yet (default: "/integration/v1/issuances/{id}"). */
  issuance_data_path: apiPath.default('/integration/v1/issuances/{id}'),
  /** getUnitsData path, not published yet (default: "/integration/v1/units/{id}"). */
  units_data_path: apiPath.default('/integration/v1/units/{id}'),
  /** reportTransaction path (default: "/integration/v1/notify"). */
  notify_path: apiPath.default('/integration/v1/notify'),
});

const apiSchema = z.strictObject({
  /** host:port of the internal API (default: "127.0.0.1:8787"). */
  listen: hostPort.default('127.0.0.1:8787'),
  /** Bearer token the internal API requires (default: none, which refuses every call but /healthz). */
  token: z.string().min(1).optional(),
  /** Change feed event streams open at once; one more is answered 503 with Retry-After (default: 2000). */
  max_streams: z.number().int().min(1).default(2000),
  /** Change feed long-polls waiting at once; one more is answered 503 with Retry-After (default: 2000). */
  max_long_polls: z.number().int().min(1).default(2000),
  /** Bytes an event stream's client may leave untaken before it is closed to reconnect with Last-Event-ID (default: 262144). */
  stream_buffer_bytes: z.number().int().min(131_072).default(262_144),
});

const webhookFieldsSchema = z.strictObject({
  /** Where the event type is read, first found wins (default: ["type", "event", "eventType"]). */
  type: z.array(z.string().min(1)).min(1).default(['type', 'event', 'eventType']),
  /** Where the operation's reference is read (default: ["marketplaceTransactionRef", "transactionReferenceId"]). */
  ref: z.array(z.string().min(1)).min(1).default(['marketplaceTransactionRef', 'transactionReferenceId']),
  /** Where an explicit decision is read (default: ["status"]). */
  status: z.array(z.string().min(1)).min(1).default(['status']),
  /** Where a rejection reason is read (default: ["reason"]). */
  reason: z.array(z.string().min(1)).min(1).default(['reason']),
});

/** Words compared as whole values after lower-casing and splitting on `.`, `_`, `-`, `:`, `/` and spaces. */
const decisionWords = z.array(
  z.string().refine((w) => canonicalWord(w) !== '', 'expected a word, not only separators'),
);

const webhookDecisionsSchema = z
  .strictObject({
    /** Type or status values that approve an operation (default: ["approved", "approve"]). */
    approved: decisionWords.default(['approved', 'approve']),
    /** Values that reject an operation (default: ["rejected", "reject", "declined", "denied", "refused"]). */
    rejected: decisionWords.default(['rejected', 'reject', 'declined', 'denied', 'refused']),
    /** Values that confirm a custody deposit (default: ["deposit", "deposited", "deposit_confirmed"]). */
    deposit: decisionWords.default(['deposit', 'deposited', 'deposit_confirmed']),
    /** Values known to decide nothing yet: stored without a warning (default: ["pending", "received", "submitted", "processing"]). */
    neutral: decisionWords.default(['pending', 'received', 'submitted', 'processing']),
    /** Words that may precede a value in an event type, as "transaction" in "transaction.approved" (default: ["transaction", "operation", "notification", "decision", "custody", "units", "unit"]). */
    type_prefixes: decisionWords.default([
      'transaction',
      'operation',
      'notification',
      'decision',
      'custody',
      'units',
      'unit',
    ]),
  })
  .superRefine((lists, ctx) => {
    // A word in two lists would make the vocabulary guess again: refuse it, naming the key.
    const seen = new Map<string, string>();
    for (const [list, words] of Object.entries(lists)) {
      for (const [i, word] of words.entries()) {
        const key = canonicalWord(word);
        const other = seen.get(key);
        if (other !== undefined && other !== list) {
          ctx.addIssue({
            code: 'custom',
            path: [list, i],
            message: `"${word}" is also in webhook.decisions.${other}; a word may be in one list only`,
          });
        }
        seen.set(key, list);
      }
    }
  });

const webhookSchema = z.strictObject({
  /** host:port of the webhook listener (default: "127.0.0.1:8788"). */
  listen: hostPort.default('127.0.0.1:8788'),
  /** `standard-webhooks`, `hmac`, `token` or `none` (default: "standard-webhooks"). */
  scheme: z.enum(['standard-webhooks', 'hmac', 'token', 'none']).default('standard-webhooks'),
  /** Signing secrets; several during key rotation (default: none). Prefer VCU_SYNC_WEBHOOK_SECRET_FILE. */
  secrets: z.array(z.string().min(1)).default([]),
  /** Accepted clock skew of the signature timestamp, both ways, in seconds (default: 300). */
  tolerance_seconds: positiveInt.default(300),
  /** Largest accepted body in bytes (default: 262144). */
  max_body_bytes: positiveInt.default(256 * 1024),
  /** `hmac` scheme: header holding the signature (default: "x-signature"). */
  hmac_header: z.string().min(1).default('x-signature'),
  /** `hmac` scheme: signature encoding (default: "hex"). */
  hmac_encoding: z.enum(['hex', 'base64']).default('hex'),
  /** `hmac` scheme: header with a timestamp that is signed as "timestamp.body" (default: none). */
  hmac_timestamp_header: z.string().min(1).optional(),
  /** `hmac`/`token` schemes: header carrying the sender's message id; without it the body's hash is the id (default: "webhook-id"). */
  id_header: z.string().min(1).default('webhook-id'),
  /** `token` scheme: header that must equal the secret (default: "x-webhook-token"). */
  token_header: z.string().min(1).default('x-webhook-token'),
  /** Where the payload's fields are read. */
  fields: webhookFieldsSchema.default(webhookFieldsSchema.parse({})),
  /** The decision vocabulary: which type and status values decide what (see docs/webhooks.md). */
  decisions: webhookDecisionsSchema.default(webhookDecisionsSchema.parse({})),
});

const scheduleSchema = z.strictObject({
  /** Projects list (default: "17 * * * *", hourly). */
  projects: cron.default('17 * * * *'),
  /** Issuances list (default: "27 * * * *"). */
  issuances: cron.default('27 * * * *'),
  /** Unit operations, incremental (default: every 5 minutes: "*\/5 * * * *"). */
  units: cron.default('*/5 * * * *'),
  /** Custody data (default: every 15 minutes: "*\/15 * * * *"). */
  custody: cron.default('*/15 * * * *'),
});

const syncSchema = z.strictObject({
  /** Records asked for per page (default: 500). */
  page_size: positiveInt.max(100_000).default(500),
  /** Hard stop against endless paging, pages per run (default: 100000). */
  max_pages: positiveInt.default(100_000),
  /** Largest share of a resource one run may mark removed (default: 0.5). */
  max_remove_share: z.number().min(0).max(1).default(0.5),
  /** Unit operations re-read before the last known position, which must match (default: 100). */
  units_overlap: positiveInt.default(100),
  /** Sync everything when the daemon starts (default: true). */
  on_startup: z.boolean().default(true),
  /** Random delay up to this many seconds before each scheduled run (default: 30). */
  jitter_seconds: nonNegativeInt.default(30),
  /** Attempts per page on transient errors and 429, inside one run (default: 5). */
  page_attempts: positiveInt.default(5),
  /** Longest wait between page attempts, in milliseconds (default: 60000). */
  retry_cap_ms: positiveInt.default(60_000),
  /** A run that commits nothing for this long fails, waits between retries not counted; at least twice operator.timeout_ms, seconds (default: 300). */
  idle_timeout_seconds: positiveInt.default(300),
  /** A run still going after this long fails; the next one resumes from its checkpoint, seconds (default: 3600). */
  run_deadline_seconds: positiveInt.default(3600),
  /** A list run fails once it fetched more than this many times the rows the mirror held (never below 10000) (default: 10). */
  max_records_factor: z.number().positive().default(10),
  /** A list run fails once it fetched more records than this, whatever the mirror holds (default: 10000000). */
  max_records: positiveInt.default(10_000_000),
  /**
   * Run the daemon's syncs in their own worker thread with their own database connection, so a
   * page's parsing and writes never hold the event loop that answers the API and webhooks, and
   * bulk writes give way to the API's commits. SQLite only: on PostgreSQL the runs' I/O is
   * asynchronous and they run on the main thread (default: true).
   */
  thread: z.boolean().default(true),
  /** Cron schedules per resource. */
  schedule: scheduleSchema.default(scheduleSchema.parse({})),
  /** What becomes of records whose shape changed upstream (src/config/configShape.ts). */
  schema: schemaDriftSchema.default(schemaDriftSchema.parse({})),
});

const custodySchema = z.strictObject({
  /** Project ids in custody besides those learned from the outbox and webhooks (default: []). */
  projects: z.array(z.union([z.string(), z.number().int()]).transform(String)).default([]),
  /** Issuance ids in custody (default: []). */
  issuances: z.array(z.union([z.string(), z.number().int()]).transform(String)).default([]),
  /** Unit ids in custody (default: []). */
  units: z.array(z.union([z.string(), z.number().int()]).transform(String)).default([]),
});

const wireSpellingSchema = z.strictObject({
  /** (default: "Tokenization") */
  tokenization: z.string().min(1).default('Tokenization'),
  /** (default: "Transfer") */
  transfer: z.string().min(1).default('Transfer'),
  /** The interface's own example spells it lowercase (default: "retire"). */
  retire: z.string().min(1).default('retire'),
  /** (default: "Detokenization") */
  detokenization: z.string().min(1).default('Detokenization'),
});

const outboxSchema = z.strictObject({
  /** Notifications in flight at once (default: 4). */
  concurrency: positiveInt.max(64).default(4),
  /** How long a claimed row is held before another claim may take it, in seconds (default: 120). */
  lease_seconds: positiveInt.default(120),
  /** Attempts before a row is `failed` (default: 30). */
  max_attempts: positiveInt.default(30),
  /** Age after which a row still not accepted is `failed`, in hours (default: 72). */
  max_age_hours: z.number().positive().default(72),
  /** First retry delay in milliseconds, doubled each attempt (default: 1000). */
  backoff_base_ms: positiveInt.default(1_000),
  /** Longest retry delay in milliseconds (default: 600000). */
  backoff_cap_ms: positiveInt.default(600_000),
  /** Days after a final state when personal fields are scrubbed (default: 30). */
  scrub_after_days: z.number().min(0).default(30),
  /** How often the dispatcher looks for due rows when idle, in milliseconds (default: 500). */
  poll_ms: positiveInt.default(500),
  /**
   * Run the dispatcher in its own worker thread with its own database connection, so its sends and
   * commits never hold the event loop that answers the API and webhooks. SQLite only: on PostgreSQL
   * it runs on the main thread (default: true).
   */
  dispatcher_thread: z.boolean().default(true),
  /** The operationType spelling sent to the operator, per kind. */
  wire_spelling: wireSpellingSchema.default(wireSpellingSchema.parse({})),
});

const statusSchema = z.strictObject({
  /** The name this instance shows on the status page, in /status and in metrics; VCU_SYNC_INSTANCE_NAME sets it too (default: "", the host name). */
  instance_name: z.string().default(''),
  /**
   * An accepted operation with no decision after this many hours is a warning (default: 24).
   * Decisions are made by hand by the operator's administrators: a wait of hours is normal, a full
   * day without one is worth a question.
   */
  decision_warn_hours: z.number().positive().default(24),
  /**
   * More than this many accepted operations waiting for a decision is a warning, however young
   * (default: 20): a pile-up means webhooks are not arriving, long before the oldest turns a day old.
   */
  decision_warn_count: nonNegativeInt.default(20),
  /** A resource whose last success is older than this many schedule periods is a warning (default: 3). */
  stale_periods: z.number().positive().default(3),
});

const logSchema = z.strictObject({
  /** pino level: fatal, error, warn, info, debug, trace, silent (default: "info"). */
  level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

/**
 * Cross-key rules, one line each naming both keys: a lease that ran out while its request was still
 * in flight would send the operation twice; an idle timeout shorter than a request fails honest runs.
 */
export function timingProblems(c: {
  operator: { timeout_ms: number; rate_per_second: number };
  outbox: { lease_seconds: number; concurrency: number };
  sync: { idle_timeout_seconds: number };
}): string[] {
  const problems: string[] = [];
  const timeout = c.operator.timeout_ms;
  // Twice the whole-request timeout, plus the rate limit's wait for a full round of claims.
  const leaseMs = 2 * timeout + Math.ceil((c.outbox.concurrency / c.operator.rate_per_second) * 1000);
  if (c.outbox.lease_seconds * 1000 < leaseMs) {
    problems.push(
      `outbox.lease_seconds: must be at least ${Math.ceil(leaseMs / 1000)} (twice operator.timeout_ms = ${timeout} ms, plus the rate limit's wait for outbox.concurrency requests), or a row is claimed again while its request is still in flight and sent twice`,
    );
  }
  if (c.sync.idle_timeout_seconds * 1000 < 2 * timeout) {
    problems.push(
      `sync.idle_timeout_seconds: must be at least ${Math.ceil((2 * timeout) / 1000)} (twice operator.timeout_ms = ${timeout} ms), or a slow but honest answer fails the run`,
    );
  }
  return problems;
}

export const configSchema = z.strictObject({
  operator: operatorSchema.default(operatorSchema.parse({})),
  database: databaseSchema.default(databaseSchema.parse({})),
  api: apiSchema.default(apiSchema.parse({})),
  webhook: webhookSchema.default(webhookSchema.parse({})),
  sync: syncSchema.default(syncSchema.parse({})),
  custody: custodySchema.default(custodySchema.parse({})),
  outbox: outboxSchema.default(outboxSchema.parse({})),
  status: statusSchema.default(statusSchema.parse({})),
  /** The reported operations against the registry's data (src/config/configReconcile.ts). */
  reconcile: reconcileSchema.default(reconcileSchema.parse({})),
  /** Internal apps that get the operation's decisions pushed, signed (default: none). */
  subscribers: z.array(subscriberSchema).default([]),
  subscriber_delivery: subscriberDeliverySchema.default(subscriberDeliverySchema.parse({})),
  log: logSchema.default(logSchema.parse({})),
});

/** The validated configuration; `database.path` is always resolved. */
export type Config = z.output<typeof configSchema> & { database: { path: string } };
export type ConfigInput = z.input<typeof configSchema>;
