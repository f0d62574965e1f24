import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseToml, TomlError } from 'smol-toml';
import type { z } from 'zod';
import { didYouMean } from '../common/didYouMean.js';
import { ConfigError, errorMessage } from '../common/errors.js';
import { registerSecret } from '../common/redact.js';
import { databaseSecrets, maskedDatabase } from './configDatabase.js';
import { unknownKeyProblems } from './configKeys.js';
import { type Config, configSchema, timingProblems } from './configSchema.js';

export type { Config } from './configSchema.js';

/** Where configuration comes from; every field defaults to the real process's. */
export interface LoadConfigOptions {
  /** TOML file named on the command line (default: $VCU_SYNC_CONFIG, else none). */
  file?: string | undefined;
  /** Environment to read (default: process.env). */
  env?: NodeJS.ProcessEnv;
  /** Extra values applied after the environment, as TOML would spell them (default: none). */
  overrides?: Record<string, unknown>;
}

type Raw = Record<string, unknown>;

/** Environment variables that override a key: [variable, section, key]. */
const ENV_KEYS: ReadonlyArray<readonly [string, string, string]> = [
  ['VCU_SYNC_OPERATOR_URL', 'operator', 'url'],
  ['VCU_SYNC_MARKETPLACE_ID', 'operator', 'marketplace_id'],
  ['VCU_SYNC_DB', 'database', 'path'],
  ['VCU_SYNC_LISTEN', 'api', 'listen'],
  ['VCU_SYNC_WEBHOOK_LISTEN', 'webhook', 'listen'],
  ['VCU_SYNC_LOG_LEVEL', 'log', 'level'],
  ['VCU_SYNC_INSTANCE_NAME', 'status', 'instance_name'],
];

/** Secrets: [variable (also read as VARIABLE_FILE), systemd credential name, section, key]. */
const SECRET_KEYS: ReadonlyArray<readonly [string, string, string, string]> = [
  ['VCU_SYNC_API_KEY', 'api-key', 'operator', 'api_key'],
  ['VCU_SYNC_API_TOKEN', 'api-token', 'api', 'token'],
  ['VCU_SYNC_WEBHOOK_SECRET', 'webhook-secret', 'webhook', 'secrets'],
  ['VCU_SYNC_DATABASE_URL', 'database-url', 'database', 'url'],
];

/** Variables read outside the configuration: the file's path and the CLI's stack traces. */
const OTHER_VARIABLES = ['VCU_SYNC_CONFIG', 'VCU_SYNC_DEBUG'];

/** Every `VCU_SYNC_*` variable vcu-sync reads. */
export const KNOWN_VARIABLES: readonly string[] = [
  ...OTHER_VARIABLES,
  ...ENV_KEYS.map(([variable]) => variable),
  ...SECRET_KEYS.flatMap(([variable]) => [variable, `${variable}_FILE`]),
];

/**
 * One line per `VCU_SYNC_*` variable that vcu-sync does not read, naming the one it most likely
 * meant: a typo in a systemd unit's `Environment=` would otherwise be ignored without a word. A
 * warning, not an error: the process may share its environment with other tools' variables.
 */
export function unknownVariableWarnings(env: NodeJS.ProcessEnv): string[] {
  return Object.keys(env)
    .filter((name) => name.startsWith('VCU_SYNC_') && !KNOWN_VARIABLES.includes(name))
    .sort()
    .map(
      (name) =>
        `environment variable ${name} is not one vcu-sync reads; it is ignored${didYouMean(name, KNOWN_VARIABLES, 3)}`,
    );
}

function section(raw: Raw, name: string): Raw {
  const current = raw[name];
  if (current !== undefined && (typeof current !== 'object' || current === null || Array.isArray(current))) {
    throw new ConfigError([`${name}: expected a table`]);
  }
  const table = (current ?? {}) as Raw;
  raw[name] = table;
  return table;
}

function readTomlFile(file: string): Raw {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError([
      `cannot read config file ${file}: ${(err as NodeJS.ErrnoException).code ?? errorMessage(err)}`,
    ]);
  }
  try {
    return parseToml(text) as Raw;
  } catch (err) {
    if (err instanceof TomlError) {
      throw new ConfigError([
        `${file} line ${err.line}, column ${err.column}: ${err.message.split('\n')[0]}`,
      ]);
    }
    throw new ConfigError([`${file}: ${errorMessage(err)}`]);
  }
}

function readSecretFile(source: string, file: string): string {
  try {
    const value = readFileSync(file, 'utf8').trim();
    if (value === '') throw new ConfigError([`${source}: ${file} is empty`]);
    return value;
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    const code = (err as NodeJS.ErrnoException).code ?? errorMessage(err);
    throw new ConfigError([`${source}: cannot read ${file} (${code})`]);
  }
}

/** Reads one secret from (in rising precedence) the file, VAR, VAR_FILE, then the systemd credential. */
function secretFromEnvironment(
  env: NodeJS.ProcessEnv,
  variable: string,
  credential: string,
): string | undefined {
  const direct = env[variable];
  const fileVar = env[`${variable}_FILE`];
  if (direct !== undefined && direct !== '' && fileVar !== undefined && fileVar !== '') {
    throw new ConfigError([`set ${variable} or ${variable}_FILE, not both`]);
  }
  let value: string | undefined = direct === '' ? undefined : direct;
  if (fileVar) value = readSecretFile(`${variable}_FILE`, fileVar);
  const credentialsDir = env.CREDENTIALS_DIRECTORY;
  if (credentialsDir) {
    const credentialFile = path.join(credentialsDir, credential);
    try {
      value = readFileSync(credentialFile, 'utf8').trim() || value;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        throw new ConfigError([
          `credential ${credential}: cannot read (${(err as NodeJS.ErrnoException).code})`,
        ]);
      }
    }
  }
  return value;
}

function issuePath(issue: z.core.$ZodIssue): string {
  return issue.path
    .map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i === 0 ? '' : '.'}${String(p)}`))
    .join('');
}

/** One line per zod issue, naming the key; never the value (it may be a secret). */
export function describeIssues(issues: readonly z.core.$ZodIssue[]): string[] {
  return issues.flatMap((issue) => {
    const where = issuePath(issue);
    if (issue.code === 'unrecognized_keys') return unknownKeyProblems(where, issue.path, issue.keys);
    return [`${where || '(top level)'}: ${issue.message}`];
  });
}

/** Whether a secret is `whsec_` followed by base64 of at least 16 bytes (Standard Webhooks). */
function isWhsec(secret: string, prefixOptional: boolean): boolean {
  if (!prefixOptional && !secret.startsWith('whsec_')) return false;
  const body = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  return /^[A-Za-z0-9+/]+={0,2}$/.test(body) && Buffer.from(body, 'base64').length >= 16;
}

/**
 * Reads each subscriber's `secret_file` into `secret`, then checks every secret and that names
 * (given or derived from the URL) are unique; one line per problem, naming the key.
 */
function resolveSubscribers(config: Config): string[] {
  const problems: string[] = [];
  for (const [i, sub] of config.subscribers.entries()) {
    if (sub.secret_file !== undefined)
      sub.secret = readSecretFile(`subscribers[${i}].secret_file`, sub.secret_file);
    if (!isWhsec(sub.secret ?? '', false)) {
      const key = sub.secret_file === undefined ? 'secret' : 'secret_file';
      problems.push(`subscribers[${i}].${key}: expected whsec_ followed by base64 of at least 16 bytes`);
    }
  }
  const urls = new Set<string>();
  const names = new Set<string>();
  for (const [i, sub] of config.subscribers.entries()) {
    if (sub.name !== undefined && names.has(sub.name))
      problems.push(`subscribers[${i}].name: "${sub.name}" is used by another subscriber`);
    if (sub.name === undefined && urls.has(sub.url))
      problems.push(`subscribers[${i}].url: the same URL twice needs a distinct name for each`);
    if (sub.name !== undefined) names.add(sub.name);
    urls.add(sub.url);
  }
  return problems;
}

function validateWebhookSecrets(config: Config): string[] {
  if (config.webhook.scheme !== 'standard-webhooks') return [];
  return config.webhook.secrets.flatMap((secret, i) => {
    return isWhsec(secret, true)
      ? []
      : [`webhook.secrets[${i}]: expected whsec_ followed by base64 of at least 16 bytes`];
  });
}

/** Loads the TOML file, applies the environment and credentials over it, and validates the result. */
export function loadConfig(options: LoadConfigOptions = {}): Config {
  const env = options.env ?? process.env;
  const file = options.file ?? (env.VCU_SYNC_CONFIG || undefined);
  const raw: Raw = file ? readTomlFile(file) : {};

  for (const [variable, sectionName, key] of ENV_KEYS) {
    const value = env[variable];
    if (value !== undefined && value !== '') section(raw, sectionName)[key] = value;
  }
  for (const [variable, credential, sectionName, key] of SECRET_KEYS) {
    const value = secretFromEnvironment(env, variable, credential);
    if (value === undefined) continue;
    // Several webhook secrets (key rotation) are given whitespace-separated.
    section(raw, sectionName)[key] = key === 'secrets' ? value.split(/\s+/).filter(Boolean) : value;
  }
  for (const [dotted, value] of Object.entries(options.overrides ?? {})) {
    const [sectionName, key] = dotted.split('.') as [string, string];
    section(raw, sectionName)[key] = value;
  }

  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) throw new ConfigError(describeIssues(parsed.error.issues));
  const config = parsed.data as Config;
  config.database.path ??= path.join(env.STATE_DIRECTORY || '.', 'vcu-sync.db');

  const problems = [
    ...validateWebhookSecrets(config),
    ...resolveSubscribers(config),
    ...timingProblems(config),
  ];
  if (problems.length > 0) throw new ConfigError(problems);

  for (const secret of [
    config.operator.api_key,
    config.api.token,
    ...config.webhook.secrets,
    ...config.subscribers.map((s) => s.secret),
    ...databaseSecrets(config.database),
  ]) {
    if (secret) registerSecret(secret);
  }
  return config;
}

/** What is needed to talk to the operator; a clear error naming the missing key otherwise. */
export function requireOperator(config: Config): { url: string; marketplaceId: string | undefined } {
  if (!config.operator.url) {
    throw new ConfigError(['operator.url is not set (set it in the config file or VCU_SYNC_OPERATOR_URL)']);
  }
  return { url: config.operator.url, marketplaceId: config.operator.marketplace_id };
}

/** The effective configuration with every secret masked, for `vcu-sync config check`. */
export function maskedConfig(config: Config): Config {
  const copy = structuredClone(config);
  const mask = (v: string | undefined) => (v === undefined ? undefined : '********');
  copy.operator.api_key = mask(copy.operator.api_key);
  copy.api.token = mask(copy.api.token);
  copy.webhook.secrets = copy.webhook.secrets.map(() => '********');
  for (const sub of copy.subscribers) sub.secret = mask(sub.secret);
  copy.database = maskedDatabase(copy.database);
  return copy;
}
