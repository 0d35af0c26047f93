// The upload and event lists' queries: filters validated by the API's schemas, paged by
// creation-order cursors (the list kit is src/http/list-query.ts).
import type { UploadFilter } from '../../db/queries/uploads';
import type { EventFilter } from '../../db/queries/events';
import type { ListPosition } from '../../db/queries/keyset';
import { decodeCursor, EVENT_ID, parseQuery, UUID_ID } from '../../http/list-query';
import { ListUploadsQuery } from '../schemas';
import { ListEventsQuery } from '../webhook-schemas';

/** `metadata[key]=value` pairs gathered into one `metadata` object (the deepObject the schema describes). */
function withMetadataObject(query: Record<string, string>): Record<string, unknown> {
  const rest: Record<string, unknown> = {};
  const metadata: Record<string, string> = {};
  for (const [name, value] of Object.entries(query)) {
    const key = /^metadata\[(.*)\]$/.exec(name)?.[1];
    if (key === undefined) rest[name] = value;
    else metadata[key] = value;
  }
  return Object.keys(metadata).length ? { ...rest, metadata } : rest;
}

export function parseListQuery(query: Record<string, string>): { filter: UploadFilter; after?: ListPosition; limit: number } {
  const q = parseQuery(ListUploadsQuery, withMetadataObject(query));
  return {
    filter: {
      status: q.status,
      contentType: q.contentType,
      createdAfter: q.createdAfter ? new Date(q.createdAfter) : undefined,
      createdBefore: q.createdBefore ? new Date(q.createdBefore) : undefined,
      idempotencyKey: q.idempotencyKey,
      subject: q.subject,
      keyPrefix: q.keyPrefix,
      fileNamePrefix: q.fileNamePrefix,
      tags: q.tag,
      metadata: q.metadata ? Object.entries(q.metadata) : undefined,
      storageTarget: q.storageTarget === 'default' ? null : q.storageTarget,
      residency: q.residency,
    },
    after: q.cursor === undefined ? undefined : decodeCursor(q.cursor, UUID_ID),
    limit: q.limit ?? 50,
  };
}

export function parseEventQuery(query: Record<string, string>): { filter: EventFilter; after?: ListPosition; limit: number } {
  const q = parseQuery(ListEventsQuery, query);
  return {
    filter: { type: q.type, uploadId: q.uploadId, deliveryFailed: q.deliveryFailed === 'true' },
    after: q.cursor === undefined ? undefined : decodeCursor(q.cursor, EVENT_ID),
    limit: q.limit ?? 50,
  };
}
