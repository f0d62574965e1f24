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
    viewport: { width: 1280, height: 1000 },
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

      // The decisions pipeline at a glance: each stage's count.
      const pipeline = await page
        .locator('#pipeline li')
        .evaluateAll((lis) =>
          Object.fromEntries(lis.map((li) => [li.id, li.querySelector('.n')?.textContent?.trim()])),
        );
      expect(pipeline).toEqual({
        'pipe-queued': '1',
        'pipe-sending': '0',
        'pipe-accepted': '0',
        'pipe-approved': '2',
        'pipe-rejected': '1',
        'pipe-failed': '1',
      });

      // Which instance, which operator, which database, how long up: the identity line.
      const identity = await page.locator('#identity').innerText();
      expect(identity).toContain(`operator ${new URL(h.sim.url).host}`);
      expect(identity).toContain(`sqlite ${h.ctx.config.database.path}`);
      expect(identity).toMatch(/^vcu-sync \d+\.\d+\.\d+ on \S+/);
      expect(identity).toMatch(/up \d+s/);

      // The worst problem's first step, in type larger than the body's.
      const sizes = await page.locator('body').evaluate((body) => {
        const style = (el: typeof body) =>
          Number.parseFloat(body.ownerDocument.defaultView!.getComputedStyle(el).fontSize);
        return {
          body: style(body),
          action: style(body.querySelector('#first-action')!),
          largestOther: Math.max(
            ...[...body.querySelectorAll('*')]
              .filter((el) => el.id !== 'first-action' && !el.closest('#first-action'))
              .map(style),
          ),
        };
      });
      expect(sizes.action).toBeGreaterThan(sizes.body);
      expect(sizes.action).toBeGreaterThanOrEqual(sizes.largestOther);
      const firstAction = await page.locator('#first-action').innerText();
      expect(firstAction).toMatch(/^Do first: \S/);
      // It is the worst problem /status lists first, word for word.
      const status = (await (await page.request.get(`${h.base}/status`)).json()) as {
        problems: Array<{ action: string; message: string }>;
      };
      expect(status.problems.length).toBeGreaterThanOrEqual(2);
      expect(firstAction).toBe(`Do first: ${status.problems[0]!.action}`);
      expect(await page.locator('#first').innerText()).toContain(status.problems[0]!.message);
      // Each problem links to its runbook entry, and the runbook page has that anchor.
      const links = await page
        .locator('a.runbook')
        .evaluateAll((as) => as.map((a) => a.getAttribute('href')));
      expect(links.length).toBeGreaterThanOrEqual(2);
      for (const href of links) expect(href).toMatch(/^\/runbook#[a-z-]+$/);
      const runbook = await context.newPage();
      try {
        await runbook.goto(`${h.base}${links[0]}`);
        expect(await runbook.locator(links[0]!.slice('/runbook'.length)).count()).toBe(1);
      } finally {
        await runbook.close();
      }

      // The rejection with its ref and the operator's reason; the failure with its ref.
      const rejections = await page.locator('#rejections tr').allInnerTexts();
      const rejection = rejections.find((t) => t.includes('status-rej-1'));
      expect(rejection, rejections.join('\n')).toBeDefined();
      expect(rejection).toContain(REJECTION_REASON);
      const failures = await page.locator('#failures').innerText();
      expect(failures).toContain('status-fail-1');
      expect(failures).toMatch(/500/);

      // Reconciliation: the pass's findings (the transfers' units are not in custody), worst first.
      const summary = await page.locator('#reconciliation-summary').innerText();
      expect(summary).toMatch(
        /^\d+ open findings: \d+ warning \(not-in-custody \d+\); last recorded \d+s ago\./,
      );
      const findings = await page
        .locator('#reconciliation tr')
        .evaluateAll((trs) =>
          trs.slice(1).map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent?.trim() ?? '')),
        );
      expect(findings.map((cells) => cells.slice(0, 3))).toContainEqual([
        'warning',
        'not-in-custody',
        'unit 70010',
      ]);

      // Webhooks: the decisions received are listed.
      const webhooks = await page.locator('#webhooks').innerText();
      expect(webhooks).toContain('status-rej-1');

      // Two charts, each with a title saying what it measures, both axes labelled (unit on y),
      // ticks, and a legend naming every series.
      const charts = await page.locator('figure.chart').evaluateAll((figures) =>
        figures.map((fig) => {
          const svg = fig.querySelector('svg')!;
          return {
            title: fig.querySelector('figcaption')?.textContent ?? '',
            yLabel: svg.querySelector('text.axis-label.y')?.textContent ?? '',
            xLabel: svg.querySelector('text.axis-label.x')?.textContent ?? '',
            ticks: svg.querySelectorAll('text.tick').length,
            legend: [...fig.querySelectorAll('.legend li')].map((li) => li.textContent ?? ''),
            dots: svg.querySelectorAll('circle').length,
            bars: svg.querySelectorAll('rect').length,
            width: svg.getBoundingClientRect().width,
          };
        }),
      );
      expect(charts).toHaveLength(2);
      expect(charts[0]!.title).toMatch(/Sync run duration by resource/);
      expect(charts[0]!.yLabel).toBe('seconds');
      expect(charts[0]!.legend.map((l) => l.split(' ')[0])).toEqual([
        'projects',
        'issuances',
        'units',
        'custody',
      ]);
      expect(charts[0]!.dots).toBeGreaterThanOrEqual(4);
      expect(charts[1]!.title).toMatch(/Unsent operations/);
      expect(charts[1]!.yLabel).toBe('operations');
      expect(charts[1]!.legend).toHaveLength(1);
      expect(charts[1]!.bars).toBeGreaterThan(0);
      for (const c of charts) {
        expect(c.xLabel).toMatch(/time/);
        expect(c.ticks).toBeGreaterThanOrEqual(6);
        expect(c.width).toBeGreaterThan(100);
        expect(c.title).not.toMatch(/max \d/);
      }

      const shot = path.join(dir, 'status.png');
      await page.screenshot({ path: shot, fullPage: true });
      if (process.env.VCU_SYNC_KEEP_SCREENSHOT) copyFileSync(shot, process.env.VCU_SYNC_KEEP_SCREENSHOT);
      expect(statSync(shot).size).toBeGreaterThan(20_000);
    } finally {
      await page.close();
    }
  });

  it('reads on a 390 px phone without sideways scrolling, charts and all', async () => {
    const page = await context.newPage();
    try {
      await page.setViewportSize({ width: 390, height: 844 });
      await page.goto(`${h.base}/`);
      const widths = await page.locator('body').evaluate((body) => ({
        scroll: body.ownerDocument.documentElement.scrollWidth,
        viewport: body.ownerDocument.defaultView!.innerWidth,
        widest: Math.max(...[...body.querySelectorAll('*')].map((el) => el.getBoundingClientRect().right)),
      }));
      expect(widths.viewport).toBe(390);
      expect(widths.scroll).toBeLessThanOrEqual(widths.viewport);
      expect(widths.widest).toBeLessThanOrEqual(widths.viewport);
      expect(await page.locator('#first-action').isVisible()).toBe(true);
      const chartWidths = await page
        .locator('figure.chart svg')
        .evaluateAll((svgs) => svgs.map((svg) => svg.getBoundingClientRect().width));
      for (const w of chartWidths) expect(w).toBeGreaterThan(250);
      const shot = path.join(dir, 'status-390.png');
      await page.screenshot({ path: shot, fullPage: true });
      if (process.env.VCU_SYNC_KEEP_SCREENSHOT)
        copyFileSync(shot, process.env.VCU_SYNC_KEEP_SCREENSHOT.replace(/\.png$/, '-390.png'));
      expect(statSync(shot).size).toBeGreaterThan(10_000);
    } finally {
      await page.close();
    }
  });
});
