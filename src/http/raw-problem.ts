// A problem written straight to a socket, for answers given outside Hono: a request Node's
// parser refused, or an upgrade to a WebSocket that is not granted.
import type { Problem } from '../errors';

/** The whole HTTP/1.1 response (head and problem+json body) closing the connection. */
export function rawProblemResponse(p: Problem): string {
  const body = JSON.stringify(p.toJSON());
  const retryAfter = p.retryAfter === undefined ? '' : `retry-after: ${p.retryAfter}\r\n`;
  return (
    `HTTP/1.1 ${p.status} ${p.title}\r\ncontent-type: application/problem+json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
    `${retryAfter}connection: close\r\n\r\n${body}`
  );
}
