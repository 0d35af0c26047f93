// Every activity the workers register, built from injected dependencies.
import { createStepActivities, type StepActivityDeps } from './step-activities';
import { createWebhookActivities, type WebhookActivityDeps } from './webhook-activities';
import { createEventActivities } from './event-activities';
import { createDeletionActivities, type DeletionActivityDeps } from './deletion-activities';
import { createHousekeepingActivities, type HousekeepingDeps } from './housekeeping-activities';
import { createResumableActivities } from './resumable-activities';
import { createUploadActivities, type UploadActivityDeps } from './upload-activities';
import { createReprocessActivities } from './reprocess/reprocess-activities';
import { createImportActivities, type ImportActivityDeps } from './imports/import-activities';
import { createImageActivities, type ImageActivityDeps } from './images/image-activities';
import { createTenantDeletionActivities } from './tenant-deletion-activities';
import { createStorageMoveActivities } from './targets/storage-move-activities';

export type ActivityDeps = UploadActivityDeps &
  StepActivityDeps &
  WebhookActivityDeps &
  HousekeepingDeps &
  DeletionActivityDeps &
  ImportActivityDeps &
  ImageActivityDeps;

export function createActivities(deps: ActivityDeps) {
  const webhooks = createWebhookActivities(deps);
  return {
    ...createUploadActivities(deps),
    ...createStepActivities(deps, webhooks),
    ...webhooks,
    ...createEventActivities(deps, webhooks),
    ...createHousekeepingActivities(deps),
    ...createResumableActivities(deps),
    ...createDeletionActivities(deps),
    ...createReprocessActivities(deps),
    ...createImportActivities(deps),
    ...createImageActivities(deps),
    ...createTenantDeletionActivities(deps),
    ...createStorageMoveActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
