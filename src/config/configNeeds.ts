import { ConfigError } from '../common/errors.js';
import type { Config } from './configSchema.js';

/**
 * Which settings the parts a command runs cannot do without. Loading the configuration only checks
 * that each key is well formed; every key is optional there because most commands (status, outbox,
 * db) never talk to the operator. This is the second check, per command, so that a daemon without
 * an API key is refused at start instead of blaming the operator later. Pure: config in, lines out.
 */

/** The commands whose parts need settings beyond a valid file. */
export type NeedyCommand = 'run' | 'sync';

/** Each needed setting: its key, and what else sets it. */
const URL = 'operator.url is not set (config file, or VCU_SYNC_OPERATOR_URL)';
const KEY = 'operator.api_key is not set (VCU_SYNC_API_KEY, VCU_SYNC_API_KEY_FILE or the credential api-key)';
const SECRETS =
  'webhook.secrets is empty (VCU_SYNC_WEBHOOK_SECRET, VCU_SYNC_WEBHOOK_SECRET_FILE or the credential webhook-secret)';

/** Whether the mirror syncs without being asked: at start-up or on any schedule that is not "off". */
export function syncsOnItsOwn(config: Config): boolean {
  return config.sync.on_startup || Object.values(config.sync.schedule).some((cron) => cron !== 'off');
}

/**
 * One line per missing setting that `command` needs, naming the key and what sets it; empty when
 * nothing is missing.
 * - `run`: the dispatcher always runs and posts to operator.url; the API key is needed when the
 *   mirror syncs on its own (every read carries it) or /notify carries it (operator.auth_on_notify);
 *   the webhook listener needs a secret unless webhook.scheme = "none".
 * - `sync`: every resource is read from operator.url with the API key.
 */
export function missingSettings(config: Config, command: NeedyCommand): string[] {
  const missing: string[] = [];
  if (command === 'sync') {
    if (!config.operator.url) missing.push(`${URL}: sync reads from the operator`);
    if (!config.operator.api_key) missing.push(`${KEY}: every read from the operator carries it`);
    return missing;
  }
  if (!config.operator.url) missing.push(`${URL}: the dispatcher sends operations to it`);
  if (!config.operator.api_key) {
    const users = [
      syncsOnItsOwn(config) ? 'the scheduled syncs' : '',
      config.operator.auth_on_notify ? '/notify (operator.auth_on_notify = true)' : '',
    ].filter(Boolean);
    if (users.length > 0) missing.push(`${KEY}: ${users.join(' and ')} send it`);
  }
  if (config.webhook.scheme !== 'none' && config.webhook.secrets.length === 0) {
    missing.push(
      `${SECRETS}: scheme ${config.webhook.scheme} verifies every webhook with it (webhook.scheme = "none" accepts unsigned ones)`,
    );
  }
  return missing;
}

/** Throws a ConfigError (exit 78) listing each missing setting `command` needs. */
export function requireSettings(config: Config, command: NeedyCommand): void {
  const missing = missingSettings(config, command);
  if (missing.length > 0) throw new ConfigError(missing);
}

/** Settings that are not required but leave a part doing nothing useful, for `config check`. */
export function configNotes(config: Config): string[] {
  const notes: string[] = [];
  if (!config.api.token) {
    notes.push(
      'api.token (VCU_SYNC_API_TOKEN, VCU_SYNC_API_TOKEN_FILE or the credential api-token) is not set: the internal API refuses every call but /healthz',
    );
  }
  if (config.webhook.scheme === 'none')
    notes.push('webhook.scheme is "none": webhooks are accepted without any signature');
  return notes;
}
