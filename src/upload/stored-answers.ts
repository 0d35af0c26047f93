// The answers a key row stores, byte for byte, for every arrival mode: the created upload's
// JSON, or a recorded rejection's problem. They are written by the records transaction (the
// commitRecords activity) in the same transaction as the upload row, so that whatever the
// API replays later is exactly what was committed; this module is their one format.
import { problem, type ErrorCode } from '../errors';

export interface CreatedUpload {
  uploadId: string;
  storageKey: string;
  bytes: number;
  sha256: string;
  contentType: string;
  fileName: string | null;
  createdAt: Date;
}

export function createdAnswer(u: CreatedUpload): { status: number; body: string } {
  return {
    status: 201,
    body: JSON.stringify({
      uploadId: u.uploadId,
      storageKey: u.storageKey,
      bytes: u.bytes,
      sha256: u.sha256,
      contentType: u.contentType,
      fileName: u.fileName,
      createdAt: u.createdAt.toISOString(),
    }),
  };
}

/**
 * A problem the key answers from now on, recorded and replayed: a rejection decided after the
 * claim (content_type_mismatch), by a pipeline step (upload_rejected), or the upload's deletion
 * (upload_deleted).
 */
export function rejectionAnswer(code: ErrorCode, detail: string, extra?: Record<string, unknown>): { status: number; body: string } {
  const p = problem(code, detail, extra ? { extra } : undefined);
  return { status: p.status, body: JSON.stringify(p.toJSON()) };
}
