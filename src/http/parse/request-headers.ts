// Parsers for the other upload headers. Each validates with the API's schemas (the ones
// the OpenAPI document is generated from) and returns a clean value or throws a catalogue
// error; none reads the body.
import type { z } from 'zod';
import { ContentLengthHeader, ExpiresAt, FileName, MediaType, Sha256Header, WaitQuery } from '../schemas';
import { problem, type ErrorCode } from '../../errors';

function check<T>(schema: z.ZodType<T>, value: string, code: ErrorCode): T {
  const r = schema.safeParse(value);
  if (!r.success) throw problem(code, r.error.issues[0]?.message);
  return r.data;
}

export function parseContentLength(value: string | undefined): number {
  if (value === undefined)
    throw problem('content_length_required', 'Send Content-Length: uploads are streamed and their size must be known up front.');
  return Number(check(ContentLengthHeader, value, 'header_invalid').trim());
}

const MAX_EXPIRY_MS = 100 * 365 * 24 * 3600 * 1000;

/**
 * An upload's own expiry (X-Expires-At, or the `expiresAt` field of a form, tus metadata,
 * a direct-upload plan or Uppy's metadata), normalised to UTC; it must lie in the future.
 * `code` is the problem the request's part answers (header_invalid, body_invalid, ...).
 */
export function parseExpiresAt(value: string | undefined, code: ErrorCode): string | undefined {
  if (value === undefined) return undefined;
  const at = Date.parse(check(ExpiresAt, value.trim(), code));
  if (at <= Date.now()) throw problem(code, 'expiresAt must lie in the future.');
  if (at > Date.now() + MAX_EXPIRY_MS) throw problem(code, 'expiresAt must lie within 100 years.');
  return new Date(at).toISOString();
}

export function parseSha256(value: string | undefined): string | null {
  if (value === undefined) return null;
  return check(Sha256Header, value, 'checksum_invalid');
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
  return check(FileName, name, 'header_invalid');
}

/** The media type without parameters, lower-cased; octet-stream when absent. */
export function parseContentType(value: string | undefined): string {
  if (value === undefined || value.trim() === '') return 'application/octet-stream';
  return check(MediaType, value.split(';')[0]!.trim().toLowerCase(), 'header_invalid');
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
  return Math.min(Number(check(WaitQuery, value, 'query_invalid')), maxSeconds) * 1000;
}
