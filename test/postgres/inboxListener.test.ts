import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/common/clock.js';
import { InboxStore } from '../../src/inbox/inboxStore.js';
import { createWebhookComponent } from '../../src/inbox/listener.js';
import { postgresScriptStore } from '../../src/postgres/scripts.js';
import { accept, postgresInboxHarness, T1, T2 } from '../contract/inboxStores.js';
import { testContext } from '../helpers/context.js';
import { useTestPgDatabase } from '../helpers/pgDatabase.js';
import { decisionPayload, SECRET, signed } from '../inbox/helpers.js';

/**
 * The webhook listener over real HTTP with the PostgreSQL inbox store: the same checks and status
 * codes as on SQLite, events and refusals stored in PostgreSQL, the start-up sweep on it too, and
 * nothing of the inbox written to the context's SQLite file.
 */

const pg = useTestPgDatabase();

describe('webhook listener on the PostgreSQL inbox store', () => {
  it('verifies, records once, applies, refuses with the same codes, and sweeps at start', async () => {
    const h = postgresInboxHarness(pg.db);
    await h.reset();
    const clock = new ManualClock(Date.parse(T2));
    const ctx = testContext({
      clock,
      overrides: { 'webhook.secrets': [SECRET], 'webhook.listen': '127.0.0.1:0' },
    });
    await accept(h.ops, 'ref-1');
    // Received before the listener started, while its row was not accepted yet: the start-up sweep applies it.
    await accept(h.ops, 'ref-early');
    await pg.db.pool.query(
      `INSERT INTO webhook_events (webhook_id, received_at, "marketplaceTransactionRef", decision, body, body_hash, outcome)
       VALUES ('msg_early', $1, 'ref-early', 'approved', '{}', 'h', 'pending')`,
      [T1],
    );
    const listener = createWebhookComponent(ctx, {
      store: new InboxStore(postgresScriptStore(pg.db.pool)),
    });
    await listener.start();
    try {
      expect(await h.rows()).toEqual(['ref-1 accepted', 'ref-early approved']);
      const url = listener.address()?.url ?? '';
      const post = (body: string, headers: Record<string, string>) =>
        fetch(url, { method: 'POST', headers, body });
      const msg = signed(decisionPayload('ref-1', 'approved'), { id: 'msg_1', atMs: clock.now() });

      const first = await post(msg.body, msg.headers);
      expect(first.status).toBe(200);
      expect(await first.json()).toEqual({ received: true, outcome: 'applied', replay: false });
      const again = await post(msg.body, msg.headers);
      expect(await again.json()).toEqual({ received: true, outcome: 'duplicate', replay: true });

      const forged = await post(msg.body, { ...msg.headers, 'webhook-signature': 'v1,AAAA' });
      expect(forged.status).toBe(401);
      const notJson = await post('x', { ...msg.headers, 'content-type': 'text/plain' });
      expect(notJson.status).toBe(415);

      expect(await h.events()).toEqual(['msg_early applied -> ref-early', 'msg_1 applied -> ref-1']);
      expect(await h.rows()).toEqual(['ref-1 approved', 'ref-early approved']);
      const refusals = await pg.db.pool.query('SELECT status FROM webhook_rejections ORDER BY id');
      expect(refusals.rows).toEqual([{ status: 401 }, { status: 415 }]);
      // The context's SQLite file got none of it.
      expect(ctx.database.sqlite.prepare('SELECT count(*) AS n FROM webhook_events').get()).toEqual({ n: 0 });
      expect(ctx.database.sqlite.prepare('SELECT count(*) AS n FROM webhook_rejections').get()).toEqual({
        n: 0,
      });
    } finally {
      await listener.stop();
      ctx.dispose();
    }
  });
});
