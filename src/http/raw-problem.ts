// A problem rendered as an answer: as a fetch Response (the error handler's, and answers
// given before the app), or straight to a socket (a request Node's parser refused, an
// upgrade to a WebSocket that is not granted).
import type { Problem } from '../errors';

export function problemResponse(p: Problem, extraHeaders: Record<string, string> = {}): Response {
  const headers: Record<string, string> = { 'content-type': 'application/problem+json', ...p.headers, ...extraHeaders };
  if (p.retryAfter !== undefined) headers['retry-after'] = String(p.retryAfter);
  return new Response(JSON.stringify(p.toJSON()), { status: p.status, headers });
}

/** The whole HTTP/1.1 response (head and problem+json body) closing the connection. */
export function rawProblemResponse(p: Problem): string {
  const body = JSON.stringify(p.toJSON());
  const retryAfter = p.retryAfter === undefined ? '' : `retry-after: ${p.retryAfter}\r\n`;
  return (
    `HTTP/1.1 ${p.status} ${p.title}\r\ncontent-type: application/problem+json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
    `${retryAfter}connection: close\r\n\r\n${body}`
  );
}
