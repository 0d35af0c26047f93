// Reading a file from its origin for an import: every hop checked by the one URL guard the
// webhooks use (http(s) only, no userinfo, the connection pinned to the address that was
// checked), redirects followed by hand and each re-checked, bounded in number (the tenant's
// headers go to the URL's own origin only, and no more once a redirect left it); connect, idle
// and total timeouts; the size limit applied before the body when the origin declares a
// length and while streaming when it does not. A resumed read asks for the rest with Range
// and If-Range (the validator the first answer carried); an origin that answers the whole
// body instead (no ranges, or the content changed) starts the file over, and says so. A range
// answer is taken only when it is the same file's rest: its validator the one the transfer
// began with, its Content-Range starting where asked and its total the same; any other (a
// changed or weak ETag, none at all, a shifted start, another total) starts the file over, once.
import { Transform, type Readable } from 'node:stream';
import { Agent, request, type Dispatcher } from 'undici';
import { hostListed } from '../tokens/grant';
import { assertDeliverableUrl, DisallowedUrlError, guardedLookup, type GuardOptions, type Resolver } from '../downstream/url-guard';

import type { ImportFailureCode } from './failures';

/** Why an origin gave no file: the import's own answer (stored under its key). */
export class ImportFailure extends Error {
  constructor(
    readonly code: ImportFailureCode,
    message: string,
    /** The origin's HTTP status, when it answered with one. */
    readonly originStatus?: number,
  ) {
    super(message);
  }
}

export interface OriginLimits {
  maxBytes: number;
  maxRedirects: number;
  connectMs: number;
  /** Longest wait for the answer's headers, and between two chunks of its body. */
  idleMs: number;
  /** Longest a whole read may take. */
  totalMs: number;
}

export interface OriginRead {
  url: string;
  /** Request headers the tenant gave (e.g. Authorization for a private origin): sent to `url`'s origin only. */
  headers?: Record<string, string>;
  /** Resume after `offset` bytes, if the origin still holds what `validator` (ETag or Last-Modified) named, `length` bytes long. */
  resume?: { offset: number; validator: string; length: number | null };
  /** This import's size limit (the tenant's, token's or pipeline's), when below the server's. */
  maxBytes?: number;
  /** The only hosts every hop may name (an upload token's list); absent: any. */
  hosts?: readonly string[];
}

export interface OriginBody {
  body: Readable;
  /** Where the body starts in the file: the resume offset, or 0 when the file starts over. */
  offset: number;
  /** Whether a resume was asked for and the origin sent the whole file instead. */
  restarted: boolean;
  /** The file's length, when the origin declared it. */
  length: number | null;
  /** What a later resume names in If-Range (a strong ETag, else Last-Modified); null: a resume starts over. */
  validator: string | null;
  contentType: string | null;
  /** The URL the file came from after redirects. */
  finalUrl: string;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export class Origins {
  private readonly agent: Agent;
  private destroyed = false;

  constructor(
    private readonly guard: GuardOptions & { resolve?: Resolver },
    private readonly limits: OriginLimits,
  ) {
    this.agent = new Agent({
      connect: { lookup: guardedLookup(guard), timeout: limits.connectMs },
      headersTimeout: limits.idleMs,
      bodyTimeout: limits.idleMs,
    });
  }

  /** Opens the file (or its rest); the body errors with an ImportFailure past the size limit or a timeout. */
  async open(read: OriginRead): Promise<OriginBody> {
    try {
      return await this.openOnce(read);
    } catch (err) {
      if (!(err instanceof NotTheSameFile)) throw err;
      // The origin's rest is of another file (or of none it can name): the whole file, from byte 0.
      const { resume: _, ...fresh } = read;
      return { ...(await this.openOnce(fresh)), restarted: true };
    }
  }

  private async openOnce(read: OriginRead): Promise<OriginBody> {
    const signal = AbortSignal.timeout(this.limits.totalMs);
    const own = URL.parse(read.url)?.origin;
    let url = read.url;
    // An Authorization (or any header the tenant gave) is for the origin it named: once a hop
    // leaves it for another scheme, host or port, the rest go without them (as in fetch).
    let ownOrigin = true;
    for (let hop = 0; ; hop++) {
      ownOrigin &&= URL.parse(url)?.origin === own;
      const res = await this.get(url, read, signal, ownOrigin);
      if (REDIRECTS.has(res.statusCode)) {
        await res.body.dump().catch(() => {}); // only the Location matters
        const location = one(res.headers.location);
        if (!location)
          throw new ImportFailure('import_failed', `The origin answered ${res.statusCode} without a Location.`, res.statusCode);
        if (hop >= this.limits.maxRedirects)
          throw new ImportFailure('import_failed', `The origin redirected more than ${this.limits.maxRedirects} times.`, res.statusCode);
        url = new URL(location, url).toString();
        continue;
      }
      return this.answer(res, url, read, signal);
    }
  }

  close(): Promise<void> {
    return this.destroyed ? Promise.resolve() : this.agent.close();
  }

  /** Drops every connection now: a read under way fails at once (its import was canceled). */
  destroy(): Promise<void> {
    this.destroyed = true;
    return this.agent.destroy().catch(() => {}); // already closed: nothing left to drop
  }

  private async get(url: string, read: OriginRead, signal: AbortSignal, ownOrigin: boolean): Promise<Dispatcher.ResponseData> {
    const host = URL.parse(url)?.hostname;
    if (read.hosts && host && !hostListed(read.hosts, host))
      throw new ImportFailure('import_forbidden_address', `The import reached ${host}, which the upload token does not allow.`);
    try {
      await assertDeliverableUrl(url, this.guard);
    } catch (err) {
      if (err instanceof DisallowedUrlError)
        throw new ImportFailure('import_forbidden_address', `The import URL is not allowed: ${err.message}.`);
      throw err;
    }
    const headers: Record<string, string> = {
      ...(ownOrigin ? read.headers : {}),
      'accept-encoding': 'identity',
      'user-agent': 'Oncely-Import/1',
    };
    if (read.resume) {
      headers.range = `bytes=${read.resume.offset}-`;
      headers['if-range'] = read.resume.validator;
    }
    try {
      return await request(url, { method: 'GET', headers, dispatcher: this.agent, signal });
    } catch (err) {
      throw failureOf(err, this.limits);
    }
  }

  private async answer(res: Dispatcher.ResponseData, url: string, read: OriginRead, signal: AbortSignal): Promise<OriginBody> {
    const status = res.statusCode;
    const resumed = status === 206 && read.resume !== undefined;
    if (status !== 200 && !resumed) {
      await res.body.dump().catch(() => {}); // the status is the answer
      throw new ImportFailure('import_failed', `The origin answered ${status}.`, status);
    }
    const offset = resumed ? rangeStart(one(res.headers['content-range'])) : 0;
    const length = resumed ? rangeTotal(one(res.headers['content-range'])) : declaredLength(one(res.headers['content-length']));
    if (resumed && !sameFileRest(res, read.resume!, offset, length)) {
      discard(res);
      throw new NotTheSameFile();
    }
    const maxBytes = Math.min(read.maxBytes ?? Infinity, this.limits.maxBytes);
    if (length !== null && length > maxBytes) {
      discard(res);
      throw new ImportFailure('import_too_large', `The file is ${length} bytes; the limit is ${maxBytes}.`);
    }
    const encoding = one(res.headers['content-encoding']);
    if (encoding && encoding !== 'identity') {
      discard(res);
      throw new ImportFailure('import_failed', `The origin sent the file ${encoding}-encoded although only identity was accepted.`, status);
    }
    const validator = validatorOf(res);
    const body = limitTo(maxBytes, offset);
    // Until the caller reads it (it may first await the store), a failure must not go
    // unhandled: the stream keeps its error, and the read that follows throws it.
    body.on('error', () => {});
    res.body.on('error', (err) => body.destroy(failureOf(err, this.limits)));
    // A refused or abandoned read frees its connection.
    body.once('close', () => res.body.destroy());
    signal.addEventListener('abort', () => body.destroy(timeout(this.limits)), { once: true });
    res.body.pipe(body);
    return {
      body,
      offset,
      restarted: read.resume !== undefined && !resumed,
      length,
      validator,
      contentType: one(res.headers['content-type']) ?? null,
      finalUrl: url,
    };
  }
}

/** A range answer that is not the rest of the file the transfer began with. */
class NotTheSameFile extends Error {}

/** What a later resume names in If-Range: a strong ETag, else Last-Modified; null when neither. */
function validatorOf(res: Dispatcher.ResponseData): string | null {
  const etag = one(res.headers.etag);
  return etag && !etag.startsWith('W/') ? etag : (one(res.headers['last-modified']) ?? null);
}

/**
 * Whether a 206 is the rest asked for: it names the transfer's validator (its strong ETag, or
 * for a transfer that began with Last-Modified, the same Last-Modified and no strong ETag
 * naming another version), starts at the offset asked and has the total the file had.
 */
function sameFileRest(
  res: Dispatcher.ResponseData,
  resume: NonNullable<OriginRead['resume']>,
  start: number,
  total: number | null,
): boolean {
  if (start !== resume.offset) return false;
  if (resume.length !== null && total !== resume.length) return false;
  if (resume.validator.startsWith('"')) return one(res.headers.etag) === resume.validator;
  return validatorOf(res) === resume.validator;
}

/** Drops an answer whose body is not wanted (the refusal is the answer; its connection closes). */
function discard(res: Dispatcher.ResponseData): void {
  res.body.on('error', () => {});
  res.body.destroy();
}

/** Passes the file up to `max` bytes (the body starts at `offset`); one more is import_too_large. */
function limitTo(max: number, offset: number): Transform {
  let seen = offset;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      seen += chunk.length;
      if (seen > max) return done(new ImportFailure('import_too_large', `The file is larger than the limit of ${max} bytes.`));
      done(null, chunk);
    },
  });
}

function failureOf(err: unknown, limits: OriginLimits): Error {
  if (err instanceof ImportFailure) return err;
  for (let e = err as { name?: string; code?: unknown; cause?: unknown } | undefined, i = 0; e && i < 5; e = e.cause as typeof e, i++) {
    if (e instanceof DisallowedUrlError)
      return new ImportFailure('import_forbidden_address', `The import URL is not allowed: ${e.message}.`);
    if (
      e.name === 'TimeoutError' ||
      e.name === 'AbortError' ||
      e.code === 'UND_ERR_CONNECT_TIMEOUT' ||
      e.code === 'UND_ERR_HEADERS_TIMEOUT' ||
      e.code === 'UND_ERR_BODY_TIMEOUT'
    )
      return timeout(limits);
  }
  const code = (err as { code?: unknown }).code;
  return new ImportFailure('import_failed', `The origin could not be read (${typeof code === 'string' ? code : 'connection failed'}).`);
}

const timeout = (limits: OriginLimits) =>
  new ImportFailure('import_timeout', `The origin did not send the file in time (idle ${limits.idleMs} ms, total ${limits.totalMs} ms).`);

const one = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

function declaredLength(v: string | undefined): number | null {
  return v !== undefined && /^\d{1,16}$/.test(v.trim()) ? Number(v.trim()) : null;
}

/** `bytes 100-199/1000` → 100. */
function rangeStart(v: string | undefined): number {
  const m = /^bytes (\d+)-\d+\/(?:\d+|\*)$/.exec(v?.trim() ?? '');
  return m ? Number(m[1]) : -1;
}

/** `bytes 100-199/1000` → 1000 (null for `*`). */
function rangeTotal(v: string | undefined): number | null {
  const m = /^bytes \d+-\d+\/(\d+)$/.exec(v?.trim() ?? '');
  return m ? Number(m[1]) : null;
}
