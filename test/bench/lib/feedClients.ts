import http from 'node:http';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { BENCH_API_TOKEN } from './benchConfig.js';

/** The load clients of the feed bench: SSE readers, long-poll loops, stalled sockets, timed calls. */

const AUTH = { authorization: `Bearer ${BENCH_API_TOKEN}` };

/** One request; resolves with status, body and milliseconds from sending to the answer's end. */
export function timedRequest(
  agent: http.Agent,
  port: number,
  method: 'GET' | 'POST',
  pathname: string,
  body?: string,
): Promise<{ status: number; body: string; ms: number }> {
  const start = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        agent,
        host: '127.0.0.1',
        port,
        method,
        path: pathname,
        headers: {
          ...AUTH,
          ...(body === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          text += d;
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: text, ms: performance.now() - start }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * `send()`, sent again once if the keep-alive socket it went out on was reset (the server closed it
 * as the request left: the client's race, not the server's answer); `resets` counts those.
 */
export async function resentOnReset<T>(send: () => Promise<T>, resets: { count: number }): Promise<T> {
  try {
    return await send();
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code !== 'ECONNRESET' && code !== 'EPIPE') throw err;
    resets.count++;
    return send();
  }
}

/**
 * An SSE reader on its own socket that keeps only the last event id it saw, and reconnects with
 * `Last-Event-ID` when the server closes it (as a browser's EventSource does).
 */
export class SseReader {
  last = 0;
  reconnects = 0;
  refused = 0;
  private req: http.ClientRequest | undefined;
  private stopped = false;

  constructor(private readonly port: number) {}

  open(): void {
    if (this.stopped) return;
    const req = http.get({
      host: '127.0.0.1',
      port: this.port,
      path: `/v1/changes/stream?after=${this.last}`,
      agent: false,
      headers: { ...AUTH, 'last-event-id': String(this.last) },
    });
    this.req = req;
    req.on('response', (res) => {
      if (res.statusCode !== 200) this.refused++;
      res.setEncoding('latin1');
      let tail = '';
      res.on('data', (chunk: string) => {
        const text = tail + chunk;
        const at = text.lastIndexOf('\nid: ');
        if (at >= 0) {
          const end = text.indexOf('\n', at + 5);
          if (end > 0) this.last = Math.max(this.last, Number(text.slice(at + 5, end)));
        } else if (text.startsWith('id: ')) {
          const end = text.indexOf('\n');
          if (end > 0) this.last = Math.max(this.last, Number(text.slice(4, end)));
        }
        tail = text.slice(-64);
      });
      res.on('close', () => this.again());
    });
    req.on('error', () => this.again());
  }

  private again(): void {
    if (this.stopped) return;
    this.reconnects++;
    setTimeout(() => this.open(), 100);
  }

  close(): void {
    this.stopped = true;
    this.req?.destroy();
  }
}

/** A long-poll loop: asks `after=last&wait=30`, asks again as soon as it is answered. */
export class LongPoller {
  last = 0;
  answers = 0;
  refused = 0;
  private stopped = false;

  constructor(
    private readonly agent: http.Agent,
    private readonly port: number,
  ) {}

  async run(): Promise<void> {
    while (!this.stopped) {
      try {
        const a = await timedRequest(this.agent, this.port, 'GET', `/v1/changes?after=${this.last}&wait=30`);
        if (a.status === 200) {
          this.last = (JSON.parse(a.body) as { last: number }).last;
          this.answers++;
        } else {
          this.refused++;
          await new Promise((r) => setTimeout(r, 1_000));
        }
      } catch {
        if (!this.stopped) await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  stop(): void {
    this.stopped = true;
  }
}

/** A client that asks for the stream from the start and never reads a byte of it. */
export function stalledReader(port: number): net.Socket {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => {});
  socket.write(
    `GET /v1/changes/stream?after=0 HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: ${AUTH.authorization}\r\n\r\n`,
  );
  socket.pause();
  return socket;
}

/** The resident set of process `pid`, MB (Linux). */
export async function rssMb(pid: number): Promise<number> {
  const { readFile } = await import('node:fs/promises');
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = status.match(/^VmRSS:\s+(\d+) kB/m);
  return kb ? Number(kb[1]) / 1024 : Number.NaN;
}

/** CPU seconds (user + system) process `pid` has used so far (Linux, clock ticks of 100 Hz). */
export async function cpuSeconds(pid: number): Promise<number> {
  const { readFile } = await import('node:fs/promises');
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
