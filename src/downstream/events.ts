// The webhook events an upload produces: their types, their data and their deterministic ids.
// Pure: workflows import this file.
import type { DownstreamInput } from './types';

export type EventType = 'upload.completed' | 'upload.processed' | 'upload.rejected' | 'upload.deleted';

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
  };
}

/** Deterministic per upload and event type: every retry and replay sends the same id. */
export function eventId(uploadId: string, type: EventType): string {
  return `evt_${uploadId.replaceAll('-', '')}_${type.split('.')[1]}`;
}
