import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_WEBHOOK_SECRET, type Simulator, startSimulator } from '../../src/simulator/index.js';
import { transfer } from '../outbox/fixtures.js';
import { hostilePeople } from '../privacy/leaks.js';
import { get, KEY, post, type Receiver, startReceiver } from './helpers.js';

/** The careless operator the privacy tests need: it quotes personal data and the key back. */
let sim: Simulator;
let receiver: Receiver;
const people = hostilePeople(1);

beforeAll(async () => {
  receiver = await startReceiver(DEFAULT_WEBHOOK_SECRET);
  sim = await startSimulator({ webhook: { url: receiver.url, delayMs: 0, echoPersonal: true } });
});
afterAll(async () => {
  await sim.close();
  await receiver.close();
});

describe('simulator echo modes', () => {
  it('echo: an error body quoting the personal fields and the whole request', async () => {
    sim.faults.next(1, 'echo', { pathPrefix: '/integration/v1/notify', echoStatus: 400 });
    const res = await post(sim, '/integration/v1/notify', { ...transfer('echo-1'), ...people });
    expect(res.status).toBe(400);
    for (const value of Object.values(people)) expect(res.text).toContain(JSON.stringify(value).slice(1, -1));
    expect((res.body as { request: unknown }).request).toMatchObject(people);
  });

  it('401 with echoKey: the offered key raw, in base64, upper case and URL-encoded', async () => {
    sim.faults.next(1, '401', { echoKey: true });
    const res = await get(sim, '/integration/v1/projects');
    expect(res.status).toBe(401);
    const message = (res.body as { message: string }).message;
    expect(message).toContain(Buffer.from(KEY).toString('base64'));
    expect(message).toContain(KEY.toUpperCase());
    expect(message).toContain(encodeURIComponent(KEY));
  });

  it('echoPersonal: decisions carry the notification and a rejection names the users', async () => {
    sim.webhooks.setDecision('echo-2', 'reject', 'No custody');
    const res = await post(sim, '/integration/v1/notify', { ...transfer('echo-2'), ...people });
    expect(res.status).toBe(202);
    const [event] = await receiver.waitFor(1);
    const data = event!.payload.data as { reason: string; notification: Record<string, unknown> };
    expect(data.notification).toMatchObject(people);
    expect(data.reason).toContain(people.originUserName);
    expect(data.reason).toContain(people.destinationUserEmail);
  });
});
