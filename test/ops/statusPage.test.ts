import { copyFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/context.js';
import { REJECTION_REASON, type SeededApi, seededApi, TOKEN } from './seed.js';

let h: SeededApi;
let context: BrowserContext;
let dir: string;
let cleanup: () => void;

beforeAll(async () => {
  h = await seededApi();
  ({ dir, cleanup } = tempDir('vcu-sync-chromium-'));
  // A fresh profile per run (playwright passes it to Chromium as --user-data-dir).
  context = await chromium.launchPersistentContext(path.join(dir, 'profile'), {
    executablePath: '/usr/bin/chromium',
    extraHTTPHeaders: { authorization: `Bearer ${TOKEN}` },
    viewport: { width: 1200, height: 1000 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
});
afterAll(async () => {
  await context?.close();
  await h?.close();
  cleanup?.();
});

describe('status page in Chromium', () => {
  it('shows the verdict, sync freshness, outbox counts, the rejection and both charts', async () => {
    const page = await context.newPage();
    try {
      const response = await page.goto(`${h.base}/`);
      expect(response?.status()).toBe(200);

      const verdict = (await page.locator('#verdict').innerText()).trim();
      expect(['OK', 'WARNING', 'CRITICAL']).toContain(verdict);
      expect(await page.title()).toBe(`vcu-sync ${verdict}`);

      // Sync freshness: one row per resource, each with its record count and a succeeded last run.
      const syncRows = await page
        .locator('#sync tr')
        .evaluateAll((trs) =>
          trs.slice(1).map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent?.trim() ?? '')),
        );
      const byResource = new Map(syncRows.map((cells) => [cells[0], cells]));
      for (const resource of ['projects', 'issuances', 'units']) {
        const cells = byResource.get(resource);
        expect(cells, `sync row of ${resource}`).toBeDefined();
        expect(cells![1]).toMatch(/ago$/);
        expect(cells![3]).toBe('succeeded');
      }
      expect(byResource.get('projects')![2]).toBe('15');
      expect(byResource.get('issuances')![2]).toBe('30');
      expect(byResource.get('units')![2]).toBe('120');

      // Outbox counts by state, header cells matched to value cells.
      const outbox = await page.locator('#outbox').evaluate((table) => {
        const rows = table.querySelectorAll('tr');
        const heads = [...rows[0]!.querySelectorAll('th')].map((th) => th.textContent?.trim() ?? '');
        const values = [...rows[1]!.querySelectorAll('td')].map((td) => td.textContent?.trim() ?? '');
        return Object.fromEntries(heads.map((k, i) => [k, values[i]]));
      });
      expect(outbox).toEqual({
        queued: '1',
        sending: '0',
        accepted: '0',
        approved: '2',
        rejected: '1',
        failed: '1',
        cancelled: '1',
      });

      // The rejection with its ref and the operator's reason; the failure with its ref.
      const rejections = await page.locator('#rejections tr').allInnerTexts();
      const rejection = rejections.find((t) => t.includes('status-rej-1'));
      expect(rejection, rejections.join('\n')).toBeDefined();
      expect(rejection).toContain(REJECTION_REASON);
      const failures = await page.locator('#failures').innerText();
      expect(failures).toContain('status-fail-1');
      expect(failures).toMatch(/500/);

      // Webhooks: the decisions received are listed.
      const webhooks = await page.locator('#webhooks').innerText();
      expect(webhooks).toContain('status-rej-1');

      // Two charts, each an SVG with marks: sync durations as dots, queue depth as bars.
      const charts = await page.locator('.charts svg').evaluateAll((svgs) =>
        svgs.map((svg) => ({
          label: svg.getAttribute('aria-label'),
          dots: svg.querySelectorAll('circle').length,
          bars: svg.querySelectorAll('rect').length,
          width: svg.getBoundingClientRect().width,
        })),
      );
      expect(charts).toHaveLength(2);
      expect(charts[0]!.label).toMatch(/Sync run durations/);
      expect(charts[0]!.dots).toBeGreaterThanOrEqual(4);
      expect(charts[1]!.label).toMatch(/Unsent operations/);
      expect(charts[1]!.bars).toBeGreaterThan(0);
      expect(charts.every((c) => c.width > 100)).toBe(true);

      const shot = path.join(dir, 'status.png');
      await page.screenshot({ path: shot, fullPage: true });
      if (process.env.VCU_SYNC_KEEP_SCREENSHOT) copyFileSync(shot, process.env.VCU_SYNC_KEEP_SCREENSHOT);
      expect(statSync(shot).size).toBeGreaterThan(20_000);
      if (process.env.VCU_SYNC_KEEP_SCREENSHOT) {
        const { copyFileSync } = await import('node:fs');
        copyFileSync(shot, process.env.VCU_SYNC_KEEP_SCREENSHOT);
      }
    } finally {
      await page.close();
    }
  });
});
