import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anchorOf, readRunbookMarkdown, renderRunbook } from '../../src/api/runbook.js';
import type { createApiComponent } from '../../src/api/server.js';
import { PROBLEM_CODES } from '../../src/health/rules.js';
import { testContext } from '../helpers/context.js';
import { sqliteApiComponent } from '../helpers/sqliteApi.js';

describe('GET /runbook', () => {
  let ctx: ReturnType<typeof testContext>;
  let api: ReturnType<typeof createApiComponent>;
  beforeAll(async () => {
    ctx = testContext({
      overrides: { 'api.listen': '127.0.0.1:0', 'api.token': 'runbook-token-0123456789' },
    });
    api = sqliteApiComponent(ctx);
    await api.start();
  });
  afterAll(async () => {
    await api.stop();
    ctx.dispose();
  });

  it("serves README's runbook without a token, with an anchor for every problem code", async () => {
    const res = await fetch(`http://127.0.0.1:${api.address()!.port}/runbook`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    const html = await res.text();
    for (const code of PROBLEM_CODES) expect(html, code).toContain(`<h2 id="${code}">`);
    expect(html).toContain('<h2 id="alerts-prometheus-raises-itself">');
    // Inline Markdown is rendered, and text is escaped.
    expect(html).toMatch(/<b>critical\.<\/b>/);
    expect(html).toContain('<code>vcu-sync outbox list --state failed</code>');
  });

  it('renders the subset of Markdown it needs, escaping everything else', () => {
    const html = renderRunbook(
      '## Runbook\n\n### a-code\nline <one>\n`x & y` **b**\n\n- item\n  continued\n',
    );
    expect(html).toContain('<h1 id="runbook">Runbook</h1>');
    expect(html).toContain('<h2 id="a-code">a-code</h2>');
    expect(html).toContain('<p>line &lt;one&gt; <code>x &amp; y</code> <b>b</b></p>');
    expect(html).toContain('<ul><li>item continued</li></ul>');
    expect(anchorOf('Alerts Prometheus raises itself')).toBe('alerts-prometheus-raises-itself');
    expect(readRunbookMarkdown('/no/such/README.md')).toBeNull();
  });
});
