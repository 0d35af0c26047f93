// The downstream child's first revision, frozen: children started before pipelines (their
// input has no `pipelines`) replay and finish with it. Announce the upload, transcode it
// with the built-in default on the transcode queue, record the outcome, announce the
// renditions. Do not change it: docs/ARCHITECTURE.md ("Workflow revisions").
import { proxyActivities, proxyLocalActivities, setCurrentDetails } from '@temporalio/workflow';
import { announcer } from './announce';
import type { Activities } from '../activities';
import { eventId, uploadEventData } from '../src/downstream/events';
import { mediaKind, type DownstreamInput, type DownstreamResult } from '../src/downstream/types';
import type { TranscodeResult } from '../src/pipelines/step-results';
import { failureTypes } from '../src/temporal/names';

// Short database steps run as local activities: no task-queue round trip each.
const { listWebhookEndpoints, markUploadProcessed } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

export async function downstreamV1(input: DownstreamInput): Promise<DownstreamResult> {
  const { transcode } = proxyActivities<Activities>({
    summary: `Transcode ${input.contentType} (${input.bytes} bytes)`,
    taskQueue: input.transcodeQueue,
    startToCloseTimeout: '30 minutes',
    heartbeatTimeout: '10 seconds',
    // Bounded: a transcode that keeps failing (a crashing worker, a poisoned file) ends, and
    // the upload stays committed; media that defeats ffmpeg is a 'failed' outcome, not a retry.
    retry: {
      initialInterval: '1 second',
      maximumInterval: '1 minute',
      maximumAttempts: 5,
      nonRetryableErrorTypes: [failureTypes.objectMissing],
    },
  });
  const deliveries: Record<string, string> = {};
  // Endpoints enabled when the upload completed; one disabled since is skipped at delivery.
  const endpoints = await listWebhookEndpoints(input.tenantId);
  const announce = announcer(endpoints, input.webhookRetry, deliveries);

  const uploadData = uploadEventData(input);
  setCurrentDetails('announcing upload.completed; transcoding');
  const completed = announce(
    {
      id: eventId(input.uploadId, 'upload.completed'),
      type: 'upload.completed',
      tenantId: input.tenantId,
      uploadId: input.uploadId,
      data: uploadData,
    },
    input.createdAt,
  );
  // Media no transcoder handles is settled here, without a trip to the transcode queue.
  const result: TranscodeResult =
    mediaKind(input.contentType) === 'other'
      ? { status: 'skipped', reason: `no transcoder for ${input.contentType}`, media: null, renditions: [] }
      : await transcode(input);
  await markUploadProcessed({ uploadId: input.uploadId, outcome: result });
  setCurrentDetails(`transcode ${result.status}; announcing upload.processed`);
  const processed = announce(
    {
      id: eventId(input.uploadId, 'upload.processed'),
      type: 'upload.processed',
      tenantId: input.tenantId,
      uploadId: input.uploadId,
      data: {
        ...uploadData,
        processing: { status: result.status, reason: result.reason, media: result.media },
        renditions: result.renditions,
      },
    },
    new Date().toISOString(),
  );
  await Promise.all([completed, processed]);
  setCurrentDetails(`done: transcode ${result.status}, ${Object.keys(deliveries).length} deliveries`);
  return { processing: result.status, renditions: result.renditions.map((x) => x.name), deliveries };
}
