// Parsers for the other upload headers. Each returns a clean value or throws a catalogue
// error; none reads the body.
import { problem } from '../errors';

export function parseContentLength(value: string | undefined, maxBytes: number): number {
  if (value === undefined) throw problem('content_length_required', 'Send Content-Length: uploads are streamed and their size must be known up front.');
  if (!/^\d{1,16}$/.test(value.trim())) throw problem('header_invalid', 'Content-Length must be a non-negative integer.');
  const n = Number(value.trim());
  if (n > maxBytes) throw problem('payload_too_large', `File is ${n} bytes; the maximum is ${maxBytes} bytes.`, { extra: { maxBytes } });
  return n;
}

export function parseSha256(value: string | undefined): string | null {
  if (value === undefined) return null;
  const v = value.trim().toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(v)) throw problem('checksum_invalid');
  return v;
}

export function parseFileName(value: string | undefined): string | null {
  if (value === undefined) return null;
  let name = value.trim();
  // Non-ASCII names arrive percent-encoded (headers are Latin-1 on the wire).
  if (name.includes('%')) {
    try {
      name = decodeURIComponent(name);
    } catch {
      throw problem('header_invalid', 'X-File-Name is not valid percent-encoding.');
    }
  }
  if (name === '' || name.length > 255 || /[\x00-\x1f\x7f/\\]/.test(name)) {
    throw problem('header_invalid', 'X-File-Name must be 1-255 characters without control characters or slashes.');
  }
  return name;
}

const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;

/** The media type without parameters, lower-cased; octet-stream when absent. */
export function parseContentType(value: string | undefined): string {
  if (value === undefined || value.trim() === '') return 'application/octet-stream';
  const essence = value.split(';')[0]!.trim().toLowerCase();
  if (!MEDIA_TYPE.test(essence)) throw problem('header_invalid', 'Content-Type is not a valid media type.');
  return essence;
}

export interface WaitPreference {
  /** How long the request may wait for the upload to finish, in milliseconds. */
  waitMs: number;
}

/** RFC 7240 Prefer: `wait=N` bounds the wait; `respond-async` answers at once. */
export function parsePrefer(value: string | undefined, defaultSeconds: number, maxSeconds: number): WaitPreference {
  let seconds = defaultSeconds;
  for (const part of (value ?? '').split(/[,;]/)) {
    const p = part.trim().toLowerCase();
    if (p === 'respond-async') return { waitMs: 0 };
    const m = /^wait\s*=\s*"?(\d{1,6})"?$/.exec(p);
    if (m) seconds = Number(m[1]);
  }
  return { waitMs: Math.min(seconds, maxSeconds) * 1000 };
}

export function parseWaitQuery(value: string | undefined, maxSeconds: number): number {
  if (value === undefined) return 0;
  if (!/^\d{1,6}$/.test(value)) throw problem('query_invalid', 'wait must be a whole number of seconds.');
  return Math.min(Number(value), maxSeconds) * 1000;
}
