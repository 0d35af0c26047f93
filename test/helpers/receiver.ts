// An UploadReceiver over a test stack's own services, wired like the API's (src/api/app.ts),
// for tests that drive the upload path below HTTP (counting its RPCs, offering chosen copies).
import { AnswerCache } from '../../src/upload/answer-cache';
import { UploadReceiver, type ReceiveDeps } from '../../src/upload/receive';
import type { TestStack } from './stack';

export function stackReceiver(stack: TestStack, downstream?: ReceiveDeps['downstream']): UploadReceiver {
  const c = stack.config;
  return new UploadReceiver({
    pool: stack.runtime.pool,
    store: stack.runtime.store,
    temporal: stack.temporal,
    taskQueue: c.TASK_QUEUE_UPLOADS,
    receiveTimeoutSeconds: c.RECEIVE_TIMEOUT_SECONDS,
    lostCommitProbeSeconds: c.LOST_COMMIT_PROBE_SECONDS,
    answers: new AnswerCache(0),
    downstream,
  });
}
