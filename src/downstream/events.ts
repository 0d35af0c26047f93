// The webhook events an upload produces: their types, their data and their deterministic ids.
// Pure: workflows import this file.
import type { DownstreamInput } from './types';

export type EventType =
  | 'upload.completed'
  | 'upload.processed'
  | 'upload.rejected'
  | 'upload.deleted'
  | 'upload.updated'
  | 'upload.hold_placed'
  | 'upload.hold_released'
  | 'upload.restored';

/** Events an upload may send many of (one per version of its record, per change of its hold): their ids are numbered. */
const NUMBERED: ReadonlySet<EventType> = new Set(['upload.updated', 'upload.hold_placed', 'upload.hold_released', 'upload.restored']);

export interface WebhookEvent {
  id: string;
  type: EventType;
  tenantId: string;
  uploadId: string;
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

/** Whether `id` is one the upload's event of `type` is sent under (upload.updated: one per version). */
export function isDerivedEventId(id: string, uploadId: string, type: EventType): boolean {
  if (!NUMBERED.has(type)) return id === eventId(uploadId, type);
  return new RegExp(`^${eventId(uploadId, type)}_[1-9][0-9]*$`).test(id);
}

/** Deterministic per upload and event type: every retry and replay sends the same id. */
export function eventId(uploadId: string, type: EventType): string {
  return `evt_${uploadId.replaceAll('-', '')}_${type.split('.')[1]}`;
}
