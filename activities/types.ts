// Activity inputs shared with workflow code (type-only for workflows).
import type { StagedCopy, StoredResponse, UploadRequest } from '../src/upload/types';
import type { DownstreamRequest } from '../src/downstream/types';
import type { ErrorCode } from '../src/errors';
import type { ImportSpec } from '../src/temporal/definitions';

export interface CommitObjectInput {
  copy: StagedCopy;
}

export interface CommitRecordsInput {
  /** With `import` when the run read the file itself (its import row ends with the records). */
  request: UploadRequest & { import?: Pick<ImportSpec, 'uploadId'> };
  workflowId: string;
  uploadId: string;
  startedAtMs: number;
  /** Present when the upload is accepted. */
  copy?: StagedCopy;
  /** Present when the upload is deterministically rejected: the problem its key answers. */
  rejection?: { code: ErrorCode; detail: string; extra?: Record<string, unknown> };
}

/** The commit of workflow revision 4: the records, and the settings its downstream run needs. */
export interface CommitUploadInput extends CommitRecordsInput {
  request: UploadRequest & DownstreamRequest;
}

export type { StagedCopy, StoredResponse, UploadRequest };
