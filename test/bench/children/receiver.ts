/**
 * A bare subscriber for the subscribers bench: node:http, reads the body and answers 204, nothing
 * else (no signature check: both sides of the comparison hit the same receiver). Prints "listening PORT".
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(204).end());
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`);
});
process.once('SIGTERM', () => server.close(() => process.exit(0)));
