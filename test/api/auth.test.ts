import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, TOKEN } from './apiHarness.js';

let api: Awaited<ReturnType<typeof startApi>>;
beforeAll(async () => {
  api = await startApi();
});
afterAll(async () => {
  await api.close();
});

const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe('internal API authentication', () => {
  it('challenges a browser with Basic on the status page and lets the token in as its password', async () => {
    const refused = await fetch(`${api.base}/`);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toMatch(/^Basic realm="vcu-sync"/);
    const wrong = await fetch(`${api.base}/`, {
      headers: { authorization: basic('oncall', 'not-the-token') },
    });
    expect(wrong.status).toBe(401);
    const page = await fetch(`${api.base}/`, { headers: { authorization: basic('oncall', TOKEN) } });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(await page.text()).toContain('vcu-sync');
  });

  it('challenges API clients with Bearer, and /healthz needs nothing', async () => {
    const refused = await fetch(`${api.base}/status`);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toBe('Bearer');
    expect(
      (await fetch(`${api.base}/status`, { headers: { authorization: `Bearer ${TOKEN}` } })).status,
    ).toBe(200);
    expect((await fetch(`${api.base}/healthz`)).status).toBe(200);
  });

  it('refuses every route but /healthz when no token is configured', async () => {
    const open = await startApi({ 'api.token': undefined });
    try {
      expect((await fetch(`${open.base}/v1/projects`)).status).toBe(401);
      expect((await fetch(`${open.base}/`, { headers: { authorization: basic('x', '') } })).status).toBe(401);
      expect((await fetch(`${open.base}/healthz`)).status).toBe(200);
    } finally {
      await open.close();
    }
  });
});
