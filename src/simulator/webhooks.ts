/**
 * Outgoing webhooks: decisions on reported transactions and custody deposits, signed with the
 * official `standardwebhooks` package (the scheme the daemon's listener verifies by default).
 *
 * Decision rules, first match wins, remembered per ref (so a duplicate report gets the same one):
 *   1. an explicit per-ref decision (`setDecision`, POST /_sim/decisions);
 *   2. ref prefixes: `reject-` → rejected, `approve-` → approved, `silent-` → no webhook;
 *   3. the policy: approve | reject | none | alternate (approve, reject, approve, ...).
 * Delivery retries a few times with doubling backoff and never throws: the receiver may be down.
 */
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { JsonObject } from './types.js';

export type WebhookPolicy = 'approve' | 'reject' | 'none' | 'alternate';
export type Decision = 'approve' | 'reject' | 'none';

export interface WebhookConfig {
  /** Receiver URL; nothing is sent while unset (default: unset) */
  url?: string;
  /** Standard Webhooks secret, `whsec_<base64>` (default: DEFAULT_WEBHOOK_SECRET) */
  secret?: string;
  /** How reported transactions are decided (default: 'approve') */
  policy?: WebhookPolicy;
  /** Delay between the /notify answer and the decision webhook, in ms (default: 50) */
  delayMs?: number;
  /** Send the decision before answering /notify, to test the webhook-before-response race (default: false) */
  beforeResponse?: boolean;
  /** Delivery attempts per webhook (default: 5) */
  maxAttempts?: number;
  /** First retry delay in ms, doubled each retry (default: 50) */
  retryBaseMs?: number;
  /** Longest retry delay in ms, as operators cap their schedules so retries go on for hours (default: no cap) */
  retryMaxMs?: number;
  /** Decisions quote the notification's personal data: the whole body under `data.notification`, and the user in a rejection's reason (default: false) */
  echoPersonal?: boolean;
}

/** A fixed, documented test secret: `whsec_` + base64("vcu-sync-simulator-secret-32byte"). */
export const DEFAULT_WEBHOOK_SECRET = `whsec_${Buffer.from('vcu-sync-simulator-secret-32byte').toString('base64')}`;

export interface SentWebhook {
  id: string;
  type: string;
  url: string;
  payload: JsonObject;
  attempts: number;
  /** Status of the last attempt, when one got an HTTP answer. */
  status?: number;
  delivered: boolean;
  /** Last failure (connection error or non-2xx), without secrets. */
  error?: string;
}

export const REJECT_REASON = 'Simulated rejection: the reported units are not available in custody';

export class WebhookSender {
  config: Required<Omit<WebhookConfig, 'url'>> & { url?: string };
  readonly sent: SentWebhook[] = [];
  private readonly overrides = new Map<string, { decision: Decision; reason?: string }>();
  private readonly decided = new Map<string, Decision>();
  private readonly pending = new Set<Promise<unknown>>();
  private alternate = 0;
  private msgSeq = 0;
  /**
   * Makes message ids unique across runs (time plus randomness): a receiver keeps ids for good, and
   * a second run counting from 1 again would reuse every id of the first.
   */
  private readonly runId = `${Date.now().toString(36)}${randomBytes(4).toString('hex')}`;
  private closed = false;

  constructor(config: WebhookConfig = {}) {
    this.config = {
      secret: DEFAULT_WEBHOOK_SECRET,
      policy: 'approve',
      delayMs: 50,
      beforeResponse: false,
      maxAttempts: 5,
      retryBaseMs: 50,
      retryMaxMs: Number.POSITIVE_INFINITY,
      echoPersonal: false,
    };
    this.configure(config);
  }

  /** Changes settings at run time (the daemon's listener port may be known only later). */
  configure(patch: WebhookConfig): void {
    for (const [k, v] of Object.entries(patch)) if (v !== undefined) Object.assign(this.config, { [k]: v });
    new Webhook(this.config.secret); // throws now on a malformed secret, not at first delivery
  }

  /** Forces the decision for one ref, overriding prefixes and policy. */
  setDecision(ref: string, decision: Decision, reason?: string): void {
    this.overrides.set(ref, reason === undefined ? { decision } : { decision, reason });
    this.decided.delete(ref);
  }

  decide(ref: string): Decision {
    const known = this.overrides.get(ref)?.decision ?? this.decided.get(ref);
    if (known) return known;
    let d: Decision;
    if (ref.startsWith('reject-')) d = 'reject';
    else if (ref.startsWith('approve-')) d = 'approve';
    else if (ref.startsWith('silent-')) d = 'none';
    else if (this.config.policy === 'alternate') d = this.alternate++ % 2 === 0 ? 'approve' : 'reject';
    else d = this.config.policy;
    this.decided.set(ref, d);
    return d;
  }

  /**
   * Decides a reported transaction and sends the decision: awaited when `beforeResponse`,
   * otherwise after `delayMs` in the background (tracked, see `idle`).
   */
  async onAccepted(body: JsonObject): Promise<void> {
    const ref = String(body.marketplaceTransactionRef);
    const decision = this.decide(ref);
    if (decision === 'none' || !this.config.url) return;
    const txRef = typeof body.transactionReferenceId === 'string' ? body.transactionReferenceId : `op-${ref}`;
    const approved = decision === 'approve';
    const payload: JsonObject = {
      type: approved ? 'transaction.approved' : 'transaction.rejected',
      timestamp: new Date().toISOString(),
      data: {
        marketplaceTransactionRef: ref,
        transactionReferenceId: txRef,
        status: approved ? 'approved' : 'rejected',
        ...(approved ? {} : { reason: this.reasonFor(ref, body) }),
        ...(this.config.echoPersonal ? { notification: body } : {}),
      },
    };
    if (this.config.beforeResponse) {
      await this.send(payload);
      return;
    }
    this.track(sleep(this.config.delayMs).then(() => (this.closed ? undefined : this.send(payload))));
  }

  private reasonFor(ref: string, body: JsonObject): string {
    const reason = this.overrides.get(ref)?.reason ?? REJECT_REASON;
    if (!this.config.echoPersonal) return reason;
    const s = (k: string) => String(body[k] ?? '');
    return (
      `${reason}: ${s('originUserName')} <${s('originUserEmail')}>, document ${s('originUserDocId')}, ` +
      `to ${s('destinationUserName')} <${s('destinationUserEmail')}> (${s('destinationUserDocId')})`
    );
  }

  /** Sends a custody deposit confirmation now; resolves when delivered or given up. */
  sendDeposit(data: {
    projectID?: number | string;
    issuanceId?: string | number;
    unitIds?: (string | number)[];
  }): Promise<SentWebhook> {
    const payload: JsonObject = { type: 'custody.deposit', timestamp: new Date().toISOString(), data };
    return this.send(payload);
  }

  /** Signs and delivers one payload with retries. Never throws. */
  send(payload: JsonObject): Promise<SentWebhook> {
    const record: SentWebhook = {
      id: `msg_sim_${this.runId}_${++this.msgSeq}`,
      type: String(payload.type),
      url: this.config.url ?? '',
      payload,
      attempts: 0,
      delivered: false,
    };
    this.sent.push(record);
    return this.track(this.deliver(record));
  }

  private async deliver(record: SentWebhook): Promise<SentWebhook> {
    const body = JSON.stringify(record.payload);
    if (!record.url) {
      record.error = 'no webhook url configured';
      return record;
    }
    for (let attempt = 1; attempt <= this.config.maxAttempts && !this.closed; attempt++) {
      record.attempts = attempt;
      try {
        // Re-signed per attempt: the timestamp must stay within the receiver's tolerance.
        const now = new Date();
        const signature = new Webhook(this.config.secret).sign(record.id, now, body);
        const res = await fetch(record.url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'webhook-id': record.id,
            'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
            'webhook-signature': signature,
          },
          body,
          signal: AbortSignal.timeout(5000),
        });
        await res.arrayBuffer().catch(() => undefined);
        record.status = res.status;
        if (res.ok) {
          record.delivered = true;
          delete record.error;
          return record;
        }
        record.error = `HTTP ${res.status}`;
      } catch (err) {
        record.error =
          err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : 'error';
      }
      if (attempt < this.config.maxAttempts)
        await sleep(Math.min(this.config.retryMaxMs, this.config.retryBaseMs * 2 ** (attempt - 1)));
    }
    return record;
  }

  private track<T>(p: Promise<T>): Promise<T> {
    this.pending.add(p);
    const done = () => this.pending.delete(p);
    p.then(done, done);
    return p;
  }

  /** Resolves when every scheduled or in-flight webhook has been delivered or given up. */
  async idle(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  /** Stops retries and pending delayed sends. */
  close(): void {
    this.closed = true;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
