// A batch whose files are another S3-compatible store's objects: its first page checked by the
// request that makes the batch, then listed once by the batch's run, bounded by objects, pages
// and time (through the same address guard as every origin), then each object imported as an
// item from its path-style URL, signed afresh by each attempt of its fetch. The credentials
// are sealed with the secrets box (on the batch's row, and in each item's run under its
// object key); they are never echoed, logged or in a workflow payload in clear.
import http from 'node:http';
import https from 'node:https';
import { GetObjectCommand, ListObjectsV2Command, S3Client, type ListObjectsV2CommandOutput } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { guardedLookup } from '../downstream/url-guard';
import { problem } from '../errors';
import { traceS3Calls } from '../telemetry/s3';
import type { SecretBox } from '../secret-box';
import type { BatchItem } from './batches/queries';

/** Where a batch's objects are: an endpoint (an origin, no path), a bucket and a key prefix. */
export interface S3Location {
  endpoint: string;
  region: string;
  bucket: string;
  prefix: string;
}

/** What signs a read of the source: the store's region and credentials. */
export interface S3Access {
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export type S3Source = S3Location & Omit<S3Access, 'region'>;

/** A presigned read outlives the attempt that uses it, within S3's own limit of seven days. */
const MAX_SIGNED_SECONDS = 7 * 24 * 3600;

function client(endpoint: string, access: S3Access, guard: { allowPrivateNetworks: boolean; connectMs: number }): S3Client {
  const lookup = guardedLookup(guard);
  return traceS3Calls(
    new S3Client({
      endpoint,
      region: access.region,
      forcePathStyle: true,
      credentials: {
        accessKeyId: access.accessKeyId,
        secretAccessKey: access.secretAccessKey,
        ...(access.sessionToken ? { sessionToken: access.sessionToken } : {}),
      },
      maxAttempts: 2,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      // The connection resolves the endpoint through the guard: the address used is the address checked.
      requestHandler: {
        httpAgent: new http.Agent({ lookup }),
        httpsAgent: new https.Agent({ lookup }),
        connectionTimeout: guard.connectMs,
        requestTimeout: 30_000,
      },
    }),
  );
}

/** The object's path-style URL, each key segment encoded (so `keyOfUrl` gives the key back). */
export function objectUrl(source: S3Location, key: string): string {
  const path = [source.bucket, ...key.split('/')].map(encodeURIComponent).join('/');
  return `${source.endpoint.replace(/\/$/, '')}/${path}`;
}

/** The bucket and key a path-style object URL names. */
function keyOfUrl(url: URL): { bucket: string; key: string } {
  const [bucket, ...segments] = url.pathname.slice(1).split('/');
  return { bucket: decodeURIComponent(bucket!), key: segments.map(decodeURIComponent).join('/') };
}

/** A batch's listing (by its run): pages (S3 gives up to 1,000 keys a page; some stores fewer) and time. */
export const LISTING_BOUNDS = { maxPages: 1_000, maxMs: 5 * 60_000 } as const;

/** How far a listing may go: every remote listing is bounded by objects, pages and time, and stops when asked. */
export interface ListingBounds {
  maxItems: number;
  maxPages: number;
  /** Longest the whole listing may take. */
  maxMs: number;
  /** Stops the listing (its request ended, its run was cancelled). */
  signal?: AbortSignal;
  /** After each page (a heartbeat). */
  onPage?: (pages: number, items: number) => void;
}

/**
 * The source's objects under its prefix, in key order, as batch items (folder markers left
 * out). 422 import_source_invalid when the store cannot be listed with these credentials,
 * holds no object there, holds more than `maxItems`, or will not finish within the bounds (a
 * store that answers "more" forever, or repeats itself).
 */
export async function listSource(
  source: S3Source,
  o: { allowPrivateNetworks: boolean; connectMs: number } & ListingBounds,
): Promise<BatchItem[]> {
  const items: BatchItem[] = [];
  await listPages(source, o, (page, pages) => {
    for (const obj of page.Contents ?? []) if (obj.Key && !obj.Key.endsWith('/')) items.push({ url: objectUrl(source, obj.Key) });
    if (items.length > o.maxItems)
      throw problem(
        'import_source_invalid',
        `The source holds more than ${o.maxItems} objects under "${source.prefix}"; a batch imports at most ${o.maxItems}: name a narrower prefix.`,
      );
    o.onPage?.(pages, items.length);
  });
  if (items.length === 0) throw problem('import_source_invalid', `The source holds no objects under "${source.prefix}".`);
  return items;
}

/**
 * One page of the source, as the request that makes a batch checks it before anything is
 * stored: the credentials, the bucket, and a prefix that is not plainly empty. The rest is
 * listed by the batch's run (listSource).
 */
export async function probeSource(
  source: S3Source,
  o: { allowPrivateNetworks: boolean; connectMs: number; maxMs: number; signal?: AbortSignal },
): Promise<void> {
  let empty = false;
  await listPages(source, { ...o, maxPages: 1, maxItems: Infinity, stopAfter: 1 }, (page) => {
    empty = !page.IsTruncated && !(page.Contents ?? []).some((obj) => obj.Key && !obj.Key.endsWith('/'));
  });
  if (empty) throw problem('import_source_invalid', `The source holds no objects under "${source.prefix}".`);
}

/** Pages of the listing, each handed to `take`, within the bounds; `stopAfter` pages and no more are asked. */
async function listPages(
  source: S3Source,
  o: { allowPrivateNetworks: boolean; connectMs: number } & ListingBounds & { stopAfter?: number },
  take: (page: ListObjectsV2CommandOutput, pages: number) => void,
): Promise<void> {
  const s3 = client(source.endpoint, source, o);
  const timeLimit = AbortSignal.timeout(o.maxMs);
  const abortSignal = o.signal ? AbortSignal.any([o.signal, timeLimit]) : timeLimit;
  const seen = new Set<string>();
  let pages = 0;
  try {
    let token: string | undefined;
    do {
      if (pages >= o.maxPages)
        throw problem('import_source_invalid', `The source's listing did not end within ${o.maxPages} pages; name a narrower prefix.`);
      const page = await s3
        .send(new ListObjectsV2Command({ Bucket: source.bucket, Prefix: source.prefix, ContinuationToken: token }), { abortSignal })
        .catch((err: unknown) => {
          if (timeLimit.aborted)
            throw problem(
              'import_source_invalid',
              `The source's listing did not end within ${Math.round(o.maxMs / 1000)} s; name a narrower prefix.`,
            );
          if (o.signal?.aborted) throw o.signal.reason;
          const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
          const said = e.$metadata?.httpStatusCode ? `${e.name ?? 'an error'} (HTTP ${e.$metadata.httpStatusCode})` : 'no answer';
          throw problem('import_source_invalid', `The source bucket ${source.bucket} could not be listed: the store answered ${said}.`);
        });
      pages++;
      take(page, pages);
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
      if (token !== undefined && seen.has(token))
        throw problem('import_source_invalid', "The source's listing went round in a circle (it named a page it had already given).");
      if (token !== undefined) seen.add(token);
    } while (token && pages < (o.stopAfter ?? Infinity));
  } finally {
    s3.destroy();
  }
}

/** A GET of the object `url` names, presigned for about as long as one attempt of its fetch may take. */
export async function signedObjectUrl(url: string, access: S3Access, attemptSeconds: number): Promise<string> {
  const parsed = new URL(url);
  // Signing is local: this client never connects.
  const s3 = client(parsed.origin, access, { allowPrivateNetworks: false, connectMs: 1 });
  try {
    const { bucket, key } = keyOfUrl(parsed);
    return await getSignedUrl(s3, new GetObjectCommand({ Bucket: bucket, Key: key }), {
      expiresIn: Math.min(attemptSeconds + 600, MAX_SIGNED_SECONDS),
    });
  } finally {
    s3.destroy();
  }
}

function sealContext(what: string): string {
  return `import-s3-access\n${what}`;
}

/** Sealed for one owner (a batch's id, an import's object key): only that owner's context opens it. */
export function sealS3Access(box: SecretBox, owner: string, access: S3Access): string {
  return box.seal(JSON.stringify(access), sealContext(owner));
}

export function openS3Access(box: SecretBox, owner: string, sealed: string): S3Access {
  return JSON.parse(box.open(sealed, sealContext(owner))) as S3Access;
}
