// Interim (1xx) answers a handler sends while it still reads the request body, such as
// RUFH's 104 (Upload Resumption Supported). Node has a public call only for 100, 102 and
// 103; this writes the status line and fields the way writeEarlyHints does, through the
// response's raw write, and only on HTTP/1.1 before the final answer has begun.
import type { ServerResponse } from 'node:http';
import type { Context } from 'hono';
import type { AppEnv } from './env';

type RawWriter = ServerResponse & { _writeRaw?: (data: string, encoding: BufferEncoding) => boolean };

/** Sends one interim answer; false when it cannot be sent (not HTTP/1.1, answer already begun, no Node server). */
export function sendInformational(c: Context<AppEnv>, status: number, reason: string, fields: Record<string, string>): boolean {
  const out = c.env?.outgoing as RawWriter | undefined;
  const req = c.env?.incoming;
  if (!out?._writeRaw || !req || req.httpVersion !== '1.1' || out.headersSent || out.writableEnded || out.destroyed) return false;
  let head = `HTTP/1.1 ${status} ${reason}\r\n`;
  for (const [name, value] of Object.entries(fields)) {
    // Values are built by the server; a CR or LF would end the head early.
    if (/[\r\n]/.test(value)) return false;
    head += `${name}: ${value}\r\n`;
  }
  out._writeRaw(`${head}\r\n`, 'latin1');
  return true;
}
