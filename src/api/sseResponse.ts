import type { ServerResponse } from 'node:http';
import type { EventSink } from '../feed/stream.js';

/**
 * An event stream written straight to Node's response, not through web streams: the stream needs
 * to see what the connection holds (`writableLength`: the response's and its socket's buffers) and
 * when it drains, to pace a slow client and close one too far behind (feed/stream.ts). Chunks are
 * the shared page buffers, referenced by the socket's queue, never copied per client.
 */

/** The headers of an event stream: one answer per connection (a client reconnects anyway). */
export const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  // A stream is the connection's last answer: once it ends (the API stopping, say), the socket
  // closes instead of idling as keep-alive and holding the stop.
  connection: 'close',
  // A reverse proxy (nginx) must pass events on as they come, not buffer them.
  'x-accel-buffering': 'no',
} as const;

/** Starts the stream's answer on `res` and returns the sink the stream writes to. */
export function nodeEventSink(res: ServerResponse): EventSink {
  // The body ends with the connection (`connection: close`), so it needs no chunked framing: each
  // event write is the shared buffer alone, not a hex length and two CRLF strings around it per
  // client (three pieces encoded and gathered per write, for a thousand clients per commit).
  res.removeHeader('transfer-encoding');
  res.writeHead(200, SSE_HEADERS);
  // The headers go out now: a client sees the stream open before the first event.
  res.flushHeaders();
  return {
    write: (chunk) => res.write(chunk),
    get backlog() {
      return res.writableLength;
    },
    onDrain(fn) {
      res.on('drain', fn);
      return () => res.off('drain', fn);
    },
    close: () => res.destroy(),
  };
}
