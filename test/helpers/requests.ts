// Upload requests and runs made below HTTP, as POST /v1/uploads would make them.
import { createHash } from 'node:crypto';
import { uploadWorkflowId } from '../../src/temporal/ids';
import { downstreamSettings } from '../../src/services';
import { oneRequestUpload } from '../../src/upload/upload-request';
import type { UploadRequest } from '../../src/upload/types';
import { uploadWorkflow } from '../../workflows';
import type { TestStack } from './stack';

/** The request POST /v1/uploads makes of `body` under `key` (same fingerprint, so the HTTP route replays it). */
export function uploadRequest(tenantId: string, key: string, body: Buffer, contentType = 'text/plain'): UploadRequest {
  return oneRequestUpload({
    tenantId,
    key,
    bytes: body.length,
    contentType,
    sha256: createHash('sha256').update(body).digest('hex'),
    fileName: null,
  });
}

/** A key's upload run started by hand and left waiting for a copy (no request behind it). */
export function startWaitingRun(
  stack: TestStack,
  tenantId: string,
  key: string,
  o: { declaredBytes: number; receiveTimeoutSeconds: number },
) {
  return stack.temporal.workflow.start(uploadWorkflow, {
    workflowId: uploadWorkflowId(tenantId, key),
    taskQueue: stack.config.TASK_QUEUE_UPLOADS,
    args: [
      {
        tenantId,
        idempotencyKey: key,
        fingerprint: 'f'.repeat(64),
        contentType: 'text/plain',
        fileName: null,
        declaredBytes: o.declaredBytes,
        declaredSha256: null,
        receiveTimeoutSeconds: o.receiveTimeoutSeconds,
        downstream: downstreamSettings(stack.config),
      },
    ],
  });
}
