// POST /v1/uploads with multipart/form-data (an HTML form, `curl -F file=@x`): exactly one
// file part, streamed (busboy; never buffered) into the attempt's own object like any
// upload body; optional text fields `fileName`, `sha256`, `expiresAt`, `pipeline`,
// `metadata` (JSON), `tags` (comma-separated), and `idempotencyKey` (for forms that cannot
// set headers) and `storageTarget`, both before the file part. What identifies "the same
// request" is the file, not the envelope (the boundary and the part headers vary between
// clients): the file part's bytes (length and SHA-256), its media type and the file name.
// So a form post's fingerprint is known once its file is in, and a retry is recognised then.
import { parseStorageTarget } from '../../http/parse/storage-target';
import busboy from 'busboy';
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { problem, Problem } from '../../errors';
import { fingerprint } from '../../upload/fingerprint';
import { parseIdempotencyKey } from '../../http/parse/idempotency-key';
import type { UploadOutcome, UploadReceiver } from '../../upload/receive';
import { parseContentType, parseExpiresAt, parseFileName, parseSha256 } from '../../http/parse/request-headers';
import { parsePipelineName } from '../../pipelines/declared';
import { labelsOf, parseMetadataText, parseTagsText } from '../../http/parse/labels';
import { METADATA_LIMITS } from '../../http/schemas';
import type { Arrival } from '../../upload/admission';
import type { DeclaredUpload, UploadRequest } from '../../upload/types';
import type { UploadGrant } from '../../tokens/grant';
import { fileTooLarge, type Declared } from '../intake';
import { checkDeclared } from '../../tokens/grant';

/** The route recorded in a form post's fingerprint (a key used by one mode is refused by another). */
export const FORM_ROUTE = '/v1/uploads#form';

export interface FormPost {
  tenantId: string;
  headers: IncomingHttpHeaders;
  /** Idempotency-Key header values (a form may instead send the field `idempotencyKey`). */
  keyHeader: readonly string[] | undefined;
  body: Readable;
  waitMs: number;
  maxBytes: number;
  /** The upload token it is made with. */
  grant?: UploadGrant;
  /** How it arrives (a form of the API, or of Uppy's companion), for the validation hook. */
  arrival: Omit<Arrival, 'bytes'>;
  /** The intake's `declare` under the form's caller: its fields arrive with the body, so it is asked once they are read. */
  declare: (declared: Declared) => DeclaredUpload;
}

/** The text fields a form may carry besides idempotencyKey (others are ignored). */
const FIELDS = new Set(['fileName', 'sha256', 'expiresAt', 'pipeline', 'metadata', 'tags', 'storageTarget']);
/** The longest field: metadata (its JSON, within METADATA_LIMITS); every other field. */
const FIELD_BYTES = { metadata: METADATA_LIMITS.bytes, other: 1024 };

/** The parser's limits, which also bound a form's envelope (everything but the file's bytes). */
const LIMITS = { files: 1, fields: 10, fieldSize: FIELD_BYTES.metadata, fieldNameSize: 64, parts: 18 } as const;
/** The longest part header busboy reads (its limit, Node's default header size). */
const PART_HEADER_BYTES = 16 * 1024;

/**
 * The fewest bytes the file part of a form of `contentLength` bytes can hold: the request less
 * the longest envelope the parser would read (every part's header and delimiter, every
 * field). A form whose file would not fit even at that size is refused before it is staged.
 */
export function fileBytesAtLeast(contentLength: number, boundary: string): number {
  const delimiter = boundary.length + 8; // CRLF "--" boundary ["--"] CRLF
  const envelope = LIMITS.parts * (PART_HEADER_BYTES + delimiter) + LIMITS.fields * LIMITS.fieldSize + delimiter;
  return Math.max(0, contentLength - envelope);
}

export function isFormPost(contentType: string | undefined): boolean {
  return contentType?.split(';')[0]?.trim().toLowerCase() === 'multipart/form-data';
}

/** Parses the form and hands its file to the receiver; settles once the whole form is read. */
export function receiveFormPost(receiver: UploadReceiver, f: FormPost, onKey: (key: string) => void): Promise<UploadOutcome> {
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: f.headers,
      limits: { ...LIMITS, fileSize: f.maxBytes },
    });
  } catch (err) {
    throw problem('form_invalid', `The multipart/form-data body cannot be parsed: ${(err as Error).message}.`);
  }
  const fields: Record<string, string> = {};
  let key = f.keyHeader && f.keyHeader.length > 0 ? parseIdempotencyKey(f.keyHeader) : undefined;
  let fileSeen = false;
  let failure: Problem | undefined;
  let staged: Promise<UploadOutcome> | undefined;
  // Settles when the whole form is read: nothing is offered before (a second file part
  // after the first must leave nothing behind).
  let formRead!: () => void;
  const formDone = new Promise<void>((resolve) => (formRead = resolve));

  return new Promise<UploadOutcome>((resolve, reject) => {
    const fail = (p: Problem) => {
      failure ??= p;
    };
    parser.on('field', (name, value, info) => {
      const most = name === 'metadata' ? FIELD_BYTES.metadata : FIELD_BYTES.other;
      if (info.valueTruncated || Buffer.byteLength(value) > most)
        return fail(problem('form_invalid', `The field ${name} is longer than ${most} bytes.`));
      if (name === 'idempotencyKey') {
        if (fileSeen) return fail(problem('form_invalid', 'Send the idempotencyKey field before the file part.'));
        const fromField = parseIdempotencyKey([value]);
        if (key !== undefined && key !== fromField)
          return fail(problem('idempotency_key_invalid', 'The Idempotency-Key header and the idempotencyKey field differ.'));
        key = fromField;
      } else if (FIELDS.has(name)) fields[name] = value;
    });
    parser.on('file', (name, stream, info) => {
      if (fileSeen || failure || key === undefined) {
        if (!fileSeen && key === undefined)
          fail(problem('idempotency_key_required', 'Send an Idempotency-Key header, or an idempotencyKey field before the file part.'));
        fileSeen = true;
        stream.resume();
        return;
      }
      fileSeen = true;
      // The file's error is recorded by fail(); staging may not be reading yet (the byte-quota check
      // runs first), and an error event nobody listens to would end the process.
      stream.on('error', () => undefined);
      let contentType: string;
      // The file's objects go where the fields before it say: storageTarget must precede the file part.
      let storageTarget: string | undefined;
      try {
        contentType = parseContentType(info.mimeType);
        storageTarget = parseStorageTarget(fields.storageTarget, 'form_invalid');
        checkDeclared(f.grant, { contentType });
      } catch (err) {
        fail(err as Problem);
        stream.resume();
        return;
      }
      onKey(key);
      const tenantId = f.tenantId;
      const base: UploadRequest = {
        tenantId,
        idempotencyKey: key,
        fingerprint: '',
        contentType,
        fileName: null,
        declaredBytes: f.maxBytes,
        declaredSha256: null,
        ...(f.grant ? { grant: f.grant } : {}),
        ...(storageTarget ? { storageTarget } : {}),
        mode: 'form',
      };
      stream.once('limit', () => {
        const tooLarge = fileTooLarge(f.maxBytes);
        fail(tooLarge);
        stream.destroy(tooLarge);
      });
      // A file that cannot fit the tenant's byte quotas whatever its envelope is refused before a byte is staged.
      const length = Number(f.headers['content-length']);
      const boundary = /boundary="?([^";]+)"?/i.exec(f.headers['content-type'] ?? '')?.[1] ?? '';
      const fits = Number.isSafeInteger(length) ? receiver.refuseIfCannotFit(base, fileBytesAtLeast(length, boundary)) : Promise.resolve();
      // Fields after the file part still count: the request is identified once the form is read.
      staged = fits.then(() =>
        receiver.receiveUnsized(
          base,
          stream,
          f.waitMs,
          async (bytes, sha256) => {
            await formDone;
            if (failure) throw failure;
            const {
              fileName,
              sha256: declaredSha256,
              expiresAt,
              pipeline,
              labels,
            } = f.declare({
              key: base.idempotencyKey,
              bytes,
              contentType,
              fileName: parseFileName(fields.fileName ?? (info.filename ? encodeURIComponent(info.filename) : undefined)),
              sha256: parseSha256(fields.sha256),
              expiresAt: parseExpiresAt(fields.expiresAt, 'form_invalid'),
              pipeline: parsePipelineName(fields.pipeline, 'form_invalid'),
              labels: labelsOf(parseMetadataText(fields.metadata, 'form_invalid'), parseTagsText(fields.tags, 'form_invalid')),
              storageTarget: parseStorageTarget(fields.storageTarget, 'form_invalid'),
            });
            if (parseStorageTarget(fields.storageTarget, 'form_invalid') !== storageTarget)
              throw problem('form_invalid', 'The storageTarget field must come before the file part.');
            const req: UploadRequest = {
              ...base,
              fileName,
              declaredBytes: bytes,
              declaredSha256,
              ...(expiresAt ? { expiresAt } : {}),
              ...(pipeline ? { pipeline } : {}),
              ...(labels ? { labels } : {}),
              fingerprint: fingerprint({
                method: 'POST',
                route: FORM_ROUTE,
                tenantId,
                contentLength: bytes,
                contentType,
                sha256,
                fileName,
                expiresAt,
                pipeline,
                labels,
                storageTarget,
              }),
            };
            return req;
          },
          f.arrival,
        ),
      );
      // A file that could not be staged ends the request at once (the form is not read on).
      staged.catch((err: unknown) => {
        reject(failure ?? err);
        f.body.unpipe(parser);
        f.body.resume();
      });
    });
    parser.on('filesLimit', () => fail(problem('form_invalid', 'Send exactly one file part; this form has more.')));
    parser.on('partsLimit', () => fail(problem('form_invalid', 'The form has too many parts.')));
    parser.on('fieldsLimit', () => fail(problem('form_invalid', 'The form has too many fields.')));
    parser.on('error', (err: Error) => fail(problem('form_invalid', `The multipart/form-data body cannot be parsed: ${err.message}.`)));
    parser.on('close', () => {
      if (!fileSeen) fail(problem('form_invalid', 'The form has no file part.'));
      formRead();
      if (!staged) return reject(failure);
      staged.then(resolve, (err: unknown) => reject(failure ?? err));
    });
    f.body.on('aborted', () => parser.destroy(new Error('Unexpected end of form')));
    f.body.pipe(parser);
  });
}
