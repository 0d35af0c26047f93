// The webhook events: their types, their data and their deterministic ids. Most are an
// upload's; a storage migration announces its end. Pure: workflows import this file.
import type { DownstreamInput } from './types';

export type EventType =
  | 'upload.completed'
  | 'upload.processed'
  | 'upload.rejected'
  | 'upload.deleted'
  | 'upload.updated'
  | 'upload.hold_placed'
  | 'upload.hold_released'
  | 'upload.restored'
  | 'storage_migration.completed'
  | 'storage_migration.cancelled';

/**
 * The record's events: an upload may send many (one per version of its record, per change of
 * its hold), so their ids are numbered; each is written in its change's transaction.
 */
const NUMBERED: ReadonlySet<EventType> = new Set(['upload.updated', 'upload.hold_placed', 'upload.hold_released', 'upload.restored']);

/**
 * Whether the event goes out even once its upload is tombstoned: upload.deleted, and a record
 * event (written with its change, which came before the deletion). Any other event of a
 * deleted upload is not announced.
 */
export function sentAfterTombstone(type: EventType): boolean {
  return type === 'upload.deleted' || NUMBERED.has(type);
}

export interface WebhookEvent {
  id: string;
  type: EventType;
  tenantId: string;
  /** Null for an event that is not an upload's (a storage migration's: its id is in `data`). */
  uploadId: string | null;
  data: Record<string, unknown>;
}

/** What every event (and a pipeline's call) says of the upload. */
export function uploadEventData(input: DownstreamInput): Record<string, unknown> {
  return {
    uploadId: input.uploadId,
    storageKey: input.storageKey,
    bytes: input.bytes,
    sha256: input.sha256,
    contentType: input.contentType,
    fileName: input.fileName,
    createdAt: input.createdAt,
    ...(input.attribution ?? {}),
    // The upload's own metadata (the token's merged in); runs from before it was carried had the token's alone.
    metadata: input.labels?.metadata ?? input.attribution?.metadata ?? null,
    tags: input.labels?.tags ?? [],
  };
}

/** The body an event is recorded with and sent as (every send and redelivery uses the recorded one). */
export function eventBody(e: Pick<WebhookEvent, 'type' | 'data'>, timestamp: string): string {
  return JSON.stringify({ type: e.type, timestamp, data: e.data });
}

/** A numbered event's id: the `n`th of its type for the upload (a record's version, a hold's change). */
export function numberedEventId(uploadId: string, type: EventType, n: number): string {
  return `${eventId(uploadId, type)}_${n}`;
}

/** Whether `id` is one the subject's event of `type` is sent under (upload.updated: one per version). */
export function isDerivedEventId(id: string, subjectId: string, type: EventType): boolean {
  if (!NUMBERED.has(type)) return id === eventId(subjectId, type);
  return new RegExp(`^${eventId(subjectId, type)}_[1-9][0-9]*$`).test(id);
}

/**
 * Deterministic per subject (the upload, or the migration) and event type: every retry and
 * replay sends the same id. Subjects are UUIDs, so an upload's and a migration's never meet.
 */
export function eventId(subjectId: string, type: EventType): string {
  return `evt_${subjectId.replaceAll('-', '')}_${type.split('.')[1]}`;
}
