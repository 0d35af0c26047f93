// Serves a stored object as an HTTP answer: a strong ETag and If-None-Match (304), one
// Range part (206, 416 past the end) guarded by If-Range, Content-Disposition, and the
// headers that keep a browser from running what it fetched (nosniff; scripts and markup
// only as attachments in a CSP sandbox). The body streams from the store: memory stays flat
// whatever the size. Used by the authenticated routes and by the API's signed URLs alike.
import { pipeline, Readable, Transform } from 'node:stream';
import { noteStreamedBytes } from '../upload/gc-pacer';
import { dependency, problem } from '../errors';
import type { ObjectStore } from '../storage/store';
import { presentation, type Disposition } from './disposition';
import { resolveRange } from './range';

/** What is served: an upload's original or one of its renditions. */
export interface Servable {
  storageKey: string;
  bytes: number;
  /** The strong validator's value: it changes whenever the bytes could. */
  etag: string;
  contentType: string;
  fileName: string | null;
  lastModified: Date;
}

/** The request headers that shape the answer. */
export interface ServeRequest {
  method: string;
  range?: string;
  ifRange?: string;
  ifNoneMatch?: string;
  /** Told once the body has gone out (or stopped): how many bytes were sent. */
  sent?: (bytes: number) => void;
}

export async function serveObject(store: ObjectStore, obj: Servable, req: ServeRequest, wanted: Disposition): Promise<Response> {
  const etag = `"${obj.etag}"`;
  const shown = presentation(obj.contentType, obj.fileName, wanted, true);
  const headers: Record<string, string> = {
    etag,
    'last-modified': obj.lastModified.toUTCString(),
    'cache-control': 'private, no-cache',
    'accept-ranges': 'bytes',
    'x-content-type-options': 'nosniff',
    'content-type': shown.contentType,
    'content-disposition': shown.contentDisposition,
    ...(shown.sandbox ? { 'content-security-policy': 'sandbox' } : {}),
  };
  if (req.ifNoneMatch !== undefined && matchesAny(req.ifNoneMatch, etag)) return new Response(null, { status: 304, headers });

  // If-Range: a part only of the representation the client already holds (strong match).
  const answer = req.ifRange !== undefined && req.ifRange.trim() !== etag ? { kind: 'whole' as const } : resolveRange(req.range, obj.bytes);
  if (answer.kind === 'unsatisfiable') {
    throw problem('range_not_satisfiable', `The file has ${obj.bytes} bytes.`, { headers: { 'content-range': `bytes */${obj.bytes}` } });
  }
  const range = answer.kind === 'part' ? answer.range : undefined;
  const length = range ? range.end - range.start + 1 : obj.bytes;
  headers['content-length'] = String(length);
  if (range) headers['content-range'] = `bytes ${range.start}-${range.end}/${obj.bytes}`;
  const status = range ? 206 : 200;
  // HEAD gets the headers without the store being read; an empty file needs no read either.
  if (req.method === 'HEAD' || length === 0) return new Response(req.method === 'HEAD' ? null : '', { status, headers });

  const body = await dependency('storage_unavailable', () => store.get(obj.storageKey, range));
  if (!body) throw problem('not_found', 'The stored bytes of this upload are missing.');
  return new Response(Readable.toWeb(paced(body, req.sent)) as ReadableStream, { status, headers });
}

/**
 * The stream, counted into the GC pacer as it flows: a download is the same churn of
 * short-lived buffers as an upload, and without it their memory waits for V8's own
 * schedule (1 GiB download peak over start-up RSS: ~+120 MiB without, ~+15-20 with it and
 * bin/oncely-node's flags; bench/HISTORY.md).
 */
function paced(body: Readable, sent?: (bytes: number) => void): Readable {
  let total = 0;
  const counted = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      noteStreamedBytes(chunk.length);
      total += chunk.length;
      done(null, chunk);
    },
  });
  if (sent) counted.once('close', () => sent(total));
  // An error or an early end (the client went away) destroys both.
  pipeline(body, counted, () => {});
  return counted;
}

/** Whether an If-None-Match list names `etag` (weak comparison, RFC 9110 §13.1.2) or is `*`. */
function matchesAny(list: string, etag: string): boolean {
  const value = list.trim();
  if (value === '*') return true;
  return value.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}
