import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { BENCH_API_TOKEN } from './benchConfig.js';

/** One POST on a keep-alive agent; resolves with status and client-side milliseconds. */
export function postToApi(
  agent: http.Agent,
  port: number,
  body: string,
  path = '/v1/operations',
): Promise<{ status: number; ms: number }> {
  const start = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        agent,
        host: '127.0.0.1',
        port,
        method: 'POST',
        path,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          authorization: `Bearer ${BENCH_API_TOKEN}`,
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - start }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
