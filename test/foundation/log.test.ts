import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/common/log.js';
import { loadConfig } from '../../src/config/config.js';
import { OperatorError } from '../../src/operator/operatorErrors.js';

function capture() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { lines, log: createLogger({ level: 'debug', destination }) };
}

describe('log redaction', () => {
  it('keeps the API key, tokens, webhook secrets and personal fields out of every line', () => {
    const secret = 'whsec_c2VjcmV0LXNpZ25pbmcta2V5LWZvci10ZXN0cw==';
    loadConfig({
      env: {
        VCU_SYNC_API_KEY: 'ak-live-7f3e9a',
        VCU_SYNC_API_TOKEN: 'tk-internal-91b2',
        VCU_SYNC_WEBHOOK_SECRET: secret,
      },
    });
    const { lines, log } = capture();
    const notification = {
      marketplaceTransactionRef: 'ref-1',
      originUserName: 'Ana Pérez',
      originUserEmail: 'ana@example.org',
      originUserDocId: 'DOC-1234',
      destinationUserName: 'Bo Li',
      destinationUserEmail: 'bo@example.org',
      destinationUserDocId: 'DOC-9876',
    };
    log.info({ event: 'test.notification', notification }, 'queued');
    log.info({
      event: 'test.headers',
      headers: { apikey: 'ak-live-7f3e9a', Authorization: 'Bearer tk-internal-91b2' },
    });
    log.warn(
      { event: 'test.error', err: new OperatorError('auth', 'rejected key ak-live-7f3e9a', 401) },
      'failed',
    );
    log.error(`message quoting ${secret} and tk-internal-91b2`);
    const all = lines.join('');
    expect(lines).toHaveLength(4);
    for (const value of [
      'ak-live-7f3e9a',
      'tk-internal-91b2',
      secret,
      'Ana Pérez',
      'ana@example.org',
      'DOC-1234',
      'Bo Li',
      'bo@example.org',
      'DOC-9876',
    ]) {
      expect(all).not.toContain(value);
    }
    // What is not sensitive still reads normally.
    expect(JSON.parse(lines[0]!)).toMatchObject({
      event: 'test.notification',
      notification: { marketplaceTransactionRef: 'ref-1' },
    });
    expect(JSON.parse(lines[2]!).err.message).toBe('rejected key [redacted]');
  });
});
