// Which data key seals a payload: decided by the owning workflow's ID alone.
import { expect, it } from 'vitest';
import { payloadOwner, uploadScopes } from '../../src/codec/payload-scope';
import { uploadWorkflowId } from '../../src/temporal/ids';
import { workflowIds } from '../../src/temporal/names';
import { imageWorkflowIds } from '../../src/images/contract';
import { reprocessWorkflowIds } from '../../src/reprocess/contract';
import { importWorkflowIds } from '../../src/imports/contract';

const tenant = '0b8f7a4e-2f4c-4d7e-9b59-3c1b8e0a6d21';
const upload = '9d1c2b3a-4e5f-4a6b-8c7d-0e1f2a3b4c5d';
const wf = (workflowId: string) => ({ type: 'workflow' as const, namespace: 'default', workflowId });

it("seals an upload run under its own key, an upload's other runs under the upload's, a tenant's runs under the tenant's", () => {
  const run = uploadWorkflowId(tenant, 'key with / slashes');
  expect(payloadOwner(wf(run))).toEqual({ scope: `run:${run}`, tenantId: tenant });
  for (const id of [
    workflowIds.downstream(upload),
    imageWorkflowIds.imageVariant(upload, 'w_10'),
    reprocessWorkflowIds.reprocessUpload(upload, 'p', 2),
  ])
    expect(payloadOwner(wf(id))).toEqual({ scope: `upload:${upload}`, uploadId: upload });
  expect(payloadOwner(wf(workflowIds.deletion(upload)))).toEqual({ tenantOf: { row: 'upload', id: upload } });
  expect(payloadOwner(wf(workflowIds.redelivery(`${upload}.upload.completed`, 'req-1')))).toEqual({
    tenantOf: { row: 'event', id: `${upload}.upload.completed` },
  });
  expect(payloadOwner(wf(workflowIds.recovery(upload, '2026-01-01T00:00:00Z', '2026-01-02T00:00:00Z')))).toEqual({
    tenantOf: { row: 'endpoint', id: upload },
  });
  expect(payloadOwner(wf(reprocessWorkflowIds.reprocessJob(upload)))).toEqual({ tenantOf: { row: 'job', id: upload } });
  expect(payloadOwner(wf(importWorkflowIds.importBatch(upload)))).toEqual({ tenantOf: { row: 'batch', id: upload } });
  // An activity's payloads belong to the workflow that scheduled it.
  expect(payloadOwner({ type: 'activity', namespace: 'default', workflowId: run, isLocal: true })).toEqual({
    scope: `run:${run}`,
    tenantId: tenant,
  });
  expect(uploadScopes(upload, run)).toEqual([`upload:${upload}`, `run:${run}`]);
  expect(uploadScopes(upload, null)).toEqual([`upload:${upload}`]);
});

it('puts everything else, and anything it cannot place, under the deployment key', () => {
  for (const id of [
    workflowIds.housekeeping('q', 'expire-keys'),
    importWorkflowIds.importBatch('not-a-uuid'),
    'upload/not-a-uuid/key',
    `downstream/${upload}x`,
    `delete/${upload}/more`,
  ])
    expect(payloadOwner(wf(id)), id).toEqual({ scope: 'deployment' });
  expect(payloadOwner(undefined)).toEqual({ scope: 'deployment' });
  expect(payloadOwner({ type: 'activity', namespace: 'default', isLocal: false })).toEqual({ scope: 'deployment' });
});
