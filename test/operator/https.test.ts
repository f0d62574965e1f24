import { readFileSync } from 'node:fs';
import type http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import tls from 'node:tls';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OperatorClient } from '../../src/operator/client.js';
import { selfSignedCertificate } from '../helpers/certificate.js';
import { tempDir } from '../helpers/context.js';
import { operatorFailure } from './operatorFailure.js';

/**
 * A real operator is reached over HTTPS. Every call goes through node:https (src/http/httpRequest.ts):
 * a loopback TLS server with a certificate of its own, untrusted and then trusted (added to this
 * process's default CAs, as NODE_EXTRA_CA_CERTS would), must be refused and then served: a
 * compressed list streamed record by record, a single read, a /notify, on one kept-alive connection.
 */
const { dir, cleanup } = tempDir('vcu-sync-https-');
const defaultCas = tls.getCACertificates('default');
let server: https.Server;
let base: string;
let handshakes = 0;
const seen: Array<{ method: string; url: string; apikey: string | undefined; body: string }> = [];
const RECORDS = 3_000;

function answer(req: http.IncomingMessage, res: http.ServerResponse, body: string): void {
  seen.push({
    method: req.method ?? '',
    url: req.url ?? '',
    apikey: req.headers.apikey as string | undefined,
    body,
  });
  if (req.url?.startsWith('/integration/v1/units')) {
    const list = JSON.stringify(Array.from({ length: RECORDS }, (_, i) => ({ unitsOperationID: i })));
    res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    res.end(zlib.gzipSync(list));
  } else if (req.url === '/integration/v1/projects/7') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"projectID":7}');
  } else {
    res.writeHead(202, { 'content-type': 'application/json' });
    res.end(`{"received":${body.length}}`);
  }
}

beforeAll(async () => {
  const { cert, key } = await selfSignedCertificate(dir);
  server = https.createServer({ cert: readFileSync(cert), key: readFileSync(key) }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => answer(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  server.on('secureConnection', () => handshakes++);
  // A refused handshake is the client's doing; the server has nothing to say about it.
  server.on('tlsClientError', () => {});
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  tls.setDefaultCACertificates(defaultCas);
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  cleanup();
});

const client = () =>
  new OperatorClient({
    baseUrl: base,
    apiKey: 'k-https-123456',
    ratePerSecond: 1000,
    bufferLimitBytes: 4096,
  });

describe('the operator over HTTPS', () => {
  it('refuses an operator whose certificate is not trusted, as a transient error naming operator.url', async () => {
    const err = await operatorFailure(client().getOne('project', '/integration/v1/projects/7'));
    expect(err.kind).toBe('transient');
    expect(err.message).toMatch(/SELF_SIGNED|self-signed/i);
    expect(err.message).toContain('check operator.url');
    expect(seen).toEqual([]);
  });

  it('once trusted: a gzip list streamed, a single read and a /notify, over one kept-alive connection', async () => {
    tls.setDefaultCACertificates([...defaultCas, readFileSync(`${dir}/server.crt`, 'utf8')]);
    handshakes = 0;
    const operator = client();
    try {
      const list = await operator.list('units', '/integration/v1/units', { limit: 1000 });
      expect(list.kind).toBe('stream');
      const ids: unknown[] = [];
      if (list.kind === 'stream')
        for await (const r of list.records) ids.push((r as { unitsOperationID: number }).unitsOperationID);
      expect(ids).toEqual(Array.from({ length: RECORDS }, (_, i) => i));

      expect(await operator.getOne('project', '/integration/v1/projects/7')).toEqual({ projectID: 7 });
      const sent = await operator.notify('/integration/v1/notify', '{"ref":"tls-1"}');
      expect(sent).toMatchObject({ status: 202, body: '{"received":15}' });

      expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual([
        'GET /integration/v1/units?limit=1000',
        'GET /integration/v1/projects/7',
        'POST /integration/v1/notify',
      ]);
      expect(seen.every((s) => s.apikey === 'k-https-123456')).toBe(true);
      expect(seen[2]?.body).toBe('{"ref":"tls-1"}');
      expect(handshakes).toBe(1);
    } finally {
      operator.close();
    }
  });
});
