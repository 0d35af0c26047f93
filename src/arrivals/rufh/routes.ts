// Resumable Uploads for HTTP (draft-ietf-httpbis-resumable-upload), under the same key
// rule and the same commit as every upload. A POST /v1/uploads that says Upload-Complete
// (or an interop version Oncely speaks) is upgraded: its Idempotency-Key owns an upload
// resource at /v1/resumable-uploads/{id}, announced in a 104 while the body streams in;
// HEAD tells the offset, PATCH appends, DELETE cancels; the request that completes the
// upload answers with the upload's own 201 (and Upload-Complete: ?1), and any later append
// or retried creation replays it. Version rules live in src/arrivals/rufh/protocol.ts; the
// sessions are the core's appended sessions (src/sessions/appended.ts).
import { parseStorageTarget } from '../../http/parse/storage-target';
import { parse as parseDisposition } from 'content-disposition';
import type { Context, MiddlewareHandler } from 'hono';
import type { Config } from '../../config';
import { Problem, problem } from '../../errors';
import type { SessionRow } from '../../db/queries/sessions';
import type { AppendedSessions } from '../../sessions/appended';
import type { UploadOutcome } from '../../upload/receive';
import {
  completeHeader,
  dialectOf,
  discoveryHeaders,
  PARTIAL_UPLOAD,
  parseComplete,
  parseContentDigest,
  parseReprDigest,
  parseSfInteger,
  NEWEST_DIALECT,
  RUFH_PATH,
  uploadLimit,
  type Dialect,
} from './protocol';
import { parseUploadMetadata } from '../tus/protocol';
import { parsePipelineName } from '../../pipelines/declared';
import { labelsOf, parseMetadataText, parseTagsText } from '../../http/parse/labels';
import type { Intake } from '../intake';
import type { AppEnv } from '../../http/env';
import { header, headerValues } from '../../http/headers';
import { sendInformational } from '../../http/informational';
import { route, router } from '../../http/openapi';
import { parseIdempotencyKey } from '../../http/parse/idempotency-key';
import {
  parseContentLength,
  parseContentType,
  parseExpiresAt,
  parseFileName,
  parsePrefer,
  parseSha256,
} from '../../http/parse/request-headers';
import { absoluteUrl } from '../../http/public-url';
import { requestBody } from '../../http/request-body';
import { pathId } from '../../http/path-id';
import { replayHeaders } from '../../http/replay-headers';
import { callingToken } from '../../http/scopes';
import { renderOutcome } from '../../http/upload-answer';
import { discoverRoute, createRouteDef, headRouteDef, getRouteDef, appendRouteDef, cancelRouteDef } from './contract';

export interface ResumableDeps {
  sessions: AppendedSessions;
  config: Config;
  intake: Intake;
}

/** OPTIONS on the creation paths: mounted before authentication (clients discover without credentials). */
export function resumableDiscoveryRoutes(config: Config) {
  const app = router();
  route(app, discoverRoute, async function discoverResumableUploads(c) {
    const d = dialectOf((n) => header(c, n));
    return c.body(null, 204, discoveryHeaders(d, config.MAX_UPLOAD_BYTES, config.RESUMABLE_EXPIRY_HOURS * 3600));
  });
  return app;
}

/** The upload resources, and a dedicated creation route beside the upgrade of POST /v1/uploads. */
export function resumableUploadRoutes(deps: ResumableDeps) {
  const { sessions, config } = deps;
  const app = router();
  app.use('*', completenessOnProblems());

  route(app, createRouteDef, async function createResumableUploadRoute(c) {
    return createResumableUpload(c, deps, requestDialect(c));
  });

  app.openAPIRegistry.registerPath(headRouteDef);
  route(app, getRouteDef, async function retrieveResumableOffset(c) {
    const d = requestDialect(c);
    const s = await sessions.find(c.get('tenantId'), pathId(c, 'upload'), callingToken(c)?.id);
    const committed = s.state === 'committed';
    return c.body(null, 204, {
      'upload-offset': String(s.upload_offset),
      ...completeHeader(d, committed),
      'upload-length': String(s.upload_length),
      ...limitOf(d, sessions, config, s),
      'cache-control': 'no-store',
    });
  });

  route(app, appendRouteDef, async function appendResumableUpload(c) {
    const d = requestDialect(c);
    const tenantId = c.get('tenantId');
    const id = pathId(c, 'upload');
    const complete = parseComplete((n) => header(c, n), d);
    const offset = parseSfInteger(header(c, 'upload-offset'), 'Upload-Offset');
    if (offset === undefined) throw problem('header_invalid', 'Send Upload-Offset.');
    const mediaType = header(c, 'content-type')?.split(';')[0]?.trim().toLowerCase();
    if (d.v.partialUploadType && mediaType !== PARTIAL_UPLOAD)
      throw problem('media_type_unsupported', `Send Content-Type: ${PARTIAL_UPLOAD}.`);
    const lengthField = parseSfInteger(header(c, 'upload-length'), 'Upload-Length');
    const contentLength = declaredBodyBytes(c);
    const checksum = parseContentDigest(header(c, 'content-digest'));
    const { waitMs } = parsePrefer(header(c, 'prefer'), config.DEFAULT_WAIT_SECONDS, config.MAX_WAIT_SECONDS);
    // An upload token reaches only the uploads it created (the write below checks tenant and mode).
    const token = callingToken(c);
    if (token) await sessions.find(tenantId, id, token.id);
    const result = await sessions.write(tenantId, id, offset, requestBody(c), waitMs, {
      completes: complete,
      checksum,
      bodyBytes: contentLength,
      onAcknowledged: progressReporter(c, d),
      offsetMismatch: mismatchingOffset,
      check: (s) => {
        const length = Number(s.upload_length);
        if (lengthField !== undefined && lengthField !== length)
          throw inconsistentLength(`Upload-Length ${lengthField} differs from the upload's ${length}.`);
        if (contentLength !== undefined && complete && offset + contentLength !== length)
          throw inconsistentLength(`This append ends at ${offset + contentLength}, but the upload has ${length} bytes.`);
      },
    });
    const s = result.session;
    c.set('idempotencyKey', s.idempotency_key);
    // After completion (its answer was lost) the append gets that answer again, its body unread.
    if (result.outcome) return finalAnswer(c, d, result.outcome, s.idempotency_key, Number(s.upload_length), s.state !== 'open');
    if (complete && !result.write.cut)
      throw inconsistentLength(
        `The body ended at ${result.write.offset}, but the upload has ${s.upload_length} bytes.`,
        result.write.offset,
      );
    return c.body(null, 204, { 'upload-offset': String(result.write.offset), ...completeHeader(d, false) });
  });

  route(app, cancelRouteDef, async function cancelResumableUpload(c) {
    const tenantId = c.get('tenantId');
    const id = pathId(c, 'upload');
    await sessions.find(tenantId, id, callingToken(c)?.id);
    await sessions.terminate(tenantId, id);
    return c.body(null, 204);
  });

  return app;
}

/**
 * Upload creation (POST /v1/uploads upgraded, or POST /v1/resumable-uploads): the key's
 * session, created once; the bytes the request carries are appended as they arrive.
 */
export async function createResumableUpload(c: Context<AppEnv>, deps: ResumableDeps, d: Dialect): Promise<Response> {
  try {
    return await create(c, deps, d);
  } catch (err) {
    if (err instanceof Problem) Object.assign(err.headers, completeHeader(d, false));
    throw err;
  }
}

async function create(c: Context<AppEnv>, deps: ResumableDeps, d: Dialect): Promise<Response> {
  const { sessions, config } = deps;
  const tenantId = c.get('tenantId');
  const key = parseIdempotencyKey(headerValues(c, 'idempotency-key'));
  c.set('idempotencyKey', key);
  const complete = parseComplete((n) => header(c, n), d);
  const lengthField = parseSfInteger(header(c, 'upload-length'), 'Upload-Length');
  const contentLength = declaredBodyBytes(c);
  if (lengthField !== undefined && complete && contentLength !== undefined && lengthField !== contentLength)
    throw inconsistentLength(`Upload-Length is ${lengthField} but this complete request carries ${contentLength} bytes.`);
  if (lengthField !== undefined && contentLength !== undefined && contentLength > lengthField)
    throw inconsistentLength(`This request carries ${contentLength} bytes, more than Upload-Length (${lengthField}).`);
  const uploadLength = lengthField ?? (complete ? contentLength : undefined);
  if (uploadLength === undefined)
    throw problem(
      'header_invalid',
      'Send Upload-Length, or Upload-Complete: ?1 with Content-Length (lengths learnt later are not supported).',
    );

  // tus-js-client sends tus's Upload-Metadata on the draft too; the draft's own fields win.
  const uploadMetadata = header(c, 'upload-metadata') ?? '';
  const metadata = parseUploadMetadata(uploadMetadata);
  const declaredSha256 = agreeingSha256([
    parseSha256(header(c, 'x-file-sha256')),
    parseReprDigest(header(c, 'repr-digest')),
    metadata.sha256 === undefined ? null : parseSha256(metadata.sha256),
  ]);
  const mediaType = header(c, 'content-type')?.split(';')[0]?.trim().toLowerCase();
  const contentType = parseContentType(
    mediaType && mediaType !== PARTIAL_UPLOAD ? header(c, 'content-type') : (metadata.filetype ?? metadata.type),
  );
  const upload = deps.intake.declare(
    c,
    'rufh',
    {
      key,
      bytes: uploadLength,
      contentType,
      fileName: fileNameOf(c, metadata),
      sha256: declaredSha256,
      expiresAt: parseExpiresAt(header(c, 'x-expires-at') ?? metadata.expiresAt, 'header_invalid'),
      pipeline: parsePipelineName(header(c, 'x-pipeline') ?? metadata.pipeline, 'header_invalid'),
      labels: labelsOf(
        parseMetadataText(header(c, 'x-metadata') ?? metadata.metadata, 'header_invalid'),
        parseTagsText(header(c, 'x-tags') ?? metadata.tags, 'header_invalid'),
      ),
      storageTarget: parseStorageTarget(header(c, 'x-storage-target') ?? metadata.storageTarget, 'header_invalid'),
    },
    uploadLimit(d, { maxSize: deps.intake.maxBytes }),
  );
  const { session, replayed } = await sessions.create({
    upload,
    uploadMetadata,
    metadata: {
      ...metadata,
      ...(header(c, 'content-disposition') ? { 'content-disposition': header(c, 'content-disposition')! } : {}),
    },
  });
  c.set('outcome', replayed ? 'replayed' : 'created');
  const { waitMs } = parsePrefer(header(c, 'prefer'), config.DEFAULT_WAIT_SECONDS, config.MAX_WAIT_SECONDS);
  const location = absoluteUrl(c, config.PUBLIC_URL, `${RUFH_PATH}/${session.id}`);
  const limit = limitOf(d, sessions, config, session);
  const resource = { location, ...limit };
  if (replayed) {
    // The same creation again: its body is not read (the client appends what is missing).
    if (session.state !== 'open') {
      const outcome = await sessions.complete(tenantId, session.id, waitMs);
      return finalAnswer(c, d, outcome, key, uploadLength, true);
    }
    return c.body(null, 201, {
      ...resource,
      'upload-offset': String(session.upload_offset),
      ...completeHeader(d, false),
      ...replayHeaders(true),
      connection: 'close',
    });
  }
  if (d.informational) sendInformational(c, 104, 'Upload Resumption Supported', { ...resource, ...interopField(d) });
  const carriesBody = (contentLength ?? 0) > 0 || (contentLength === undefined && header(c, 'transfer-encoding') !== undefined);
  if (!carriesBody && !complete) return c.body(null, 201, { ...resource, 'upload-offset': '0', ...completeHeader(d, false) });
  const result = await sessions.write(tenantId, session.id, 0, requestBody(c), waitMs, {
    completes: complete,
    checksum: parseContentDigest(header(c, 'content-digest')),
    bodyBytes: contentLength,
    onAcknowledged: progressReporter(c, d),
  });
  if (result.outcome) return finalAnswer(c, d, result.outcome, key, uploadLength);
  if (complete && !result.write.cut)
    throw inconsistentLength(`The body ended at ${result.write.offset}, but the upload has ${uploadLength} bytes.`, result.write.offset);
  return c.body(null, 201, { ...resource, 'upload-offset': String(result.write.offset), ...completeHeader(d, false) });
}

/** The answer of the request that completed the upload (or of one after it): the upload's own. */
function finalAnswer(
  c: Context<AppEnv>,
  d: Dialect,
  outcome: UploadOutcome,
  key: string,
  length: number,
  closeConnection = false,
): Response {
  const res = renderOutcome(c, outcome, key, closeConnection);
  for (const [name, value] of Object.entries({ ...completeHeader(d, true), 'upload-offset': String(length) })) res.headers.set(name, value);
  return res;
}

/** 104s with the offset as each part is stored (only to a client that named a version Oncely speaks). */
function progressReporter(c: Context<AppEnv>, d: Dialect): ((offset: number) => void) | undefined {
  if (!d.informational) return undefined;
  return (offset) => sendInformational(c, 104, 'Upload Resumption Supported', { 'upload-offset': String(offset), ...interopField(d) });
}

function interopField(d: Dialect): Record<string, string> {
  return { 'upload-draft-interop-version': String(d.v.version) };
}

function limitOf(d: Dialect, sessions: AppendedSessions, config: Config, s: SessionRow): Record<string, string> {
  return uploadLimit(d, { maxSize: config.MAX_UPLOAD_BYTES, maxAgeSeconds: (sessions.expiresAt(s).getTime() - Date.now()) / 1000 });
}

/** HEAD, PATCH and DELETE carry the creation's version (or none: the newest rules). */
function requestDialect(c: Context<AppEnv>): Dialect {
  return dialectOf((n) => header(c, n)) ?? NEWEST_DIALECT;
}

/** On an error answer the upload is not complete (the draft's problem examples say so). */
function completenessOnProblems(): MiddlewareHandler<AppEnv> {
  return async function completenessOnProblems(c, next) {
    await next();
    if (c.res.status < 400 || c.res.headers.has('upload-complete') || c.res.headers.has('upload-incomplete')) return;
    let d: Dialect;
    try {
      d = requestDialect(c);
    } catch {
      return;
    }
    for (const [name, value] of Object.entries(completeHeader(d, false))) c.res.headers.set(name, value);
    if (c.req.method === 'PATCH' || c.req.method === 'POST') c.res.headers.set('connection', 'close');
  };
}

function mismatchingOffset(expected: number, provided: number): Problem {
  return problem('mismatching_upload_offset', `Upload-Offset is ${provided} but the upload is at ${expected}.`, {
    extra: { 'expected-offset': expected, 'provided-offset': provided },
    headers: { 'upload-offset': String(expected) },
  });
}

function inconsistentLength(detail: string, offset?: number): Problem {
  return problem('inconsistent_upload_length', detail, offset === undefined ? {} : { headers: { 'upload-offset': String(offset) } });
}

function declaredBodyBytes(c: Context<AppEnv>): number | undefined {
  const value = header(c, 'content-length');
  return value === undefined ? undefined : parseContentLength(value);
}

/** The file name: Content-Disposition's (RFC 6266, filename* first), else the metadata's. */
function fileNameOf(c: Context<AppEnv>, metadata: Record<string, string>): string | null {
  const disposition = header(c, 'content-disposition');
  let name: string | undefined;
  if (disposition !== undefined) {
    try {
      name = parseDisposition(disposition).parameters.filename;
    } catch {
      throw problem('header_invalid', 'Content-Disposition is not valid (RFC 6266).');
    }
  }
  name ??= metadata.filename ?? metadata.name;
  return name === undefined ? null : parseFileName(encodeURIComponent(name));
}

function agreeingSha256(values: (string | null)[]): string | null {
  const given = [...new Set(values.filter((v): v is string => v !== null))];
  if (given.length > 1) throw problem('checksum_invalid', 'X-File-Sha256, Repr-Digest and the sha256 metadata name different SHA-256s.');
  return given[0] ?? null;
}
