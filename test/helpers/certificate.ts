import { execFile } from 'node:child_process';
import { chmodSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * A throwaway self-signed certificate for 127.0.0.1 and localhost, valid two days, made by `openssl`
 * (`.ci/test-deps` installs it) in `dir`: for the TLS tests (PostgreSQL's server, an HTTPS operator).
 * The key is written 0600, as PostgreSQL requires.
 */
export async function selfSignedCertificate(dir: string): Promise<{ cert: string; key: string }> {
  const cert = path.join(dir, 'server.crt');
  const key = path.join(dir, 'server.key');
  await run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=localhost',
    '-addext',
    'subjectAltName=IP:127.0.0.1,DNS:localhost',
    '-keyout',
    key,
    '-out',
    cert,
  ]);
  chmodSync(key, 0o600);
  return { cert, key };
}
