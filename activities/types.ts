// Activity inputs shared with workflow code (type-only for workflows).
import type { StagedCopy, StoredResponse, UploadRequest } from '../src/upload/types';

export interface CommitObjectInput {
  copy: StagedCopy;
}

export interface CommitRecordsInput {
  request: UploadRequest;
  workflowId: string;
  uploadId: string;
  startedAtMs: number;
  /** Present when the upload is accepted. */
  copy?: StagedCopy;
  /** Present when the upload is deterministically rejected. */
  rejection?: { code: 'content_type_mismatch'; detail: string };
}

export type { StagedCopy, StoredResponse, UploadRequest };
