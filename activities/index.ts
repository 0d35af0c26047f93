// Every activity the workers register, built from injected dependencies.
import { createDownstreamActivities, type DownstreamActivityDeps } from './downstream-activities';
import { createDeletionActivities, type DeletionActivityDeps } from './deletion-activities';
import { createHousekeepingActivities, type HousekeepingDeps } from './housekeeping-activities';
import { createResumableActivities } from './resumable-activities';
import { createUploadActivities, type UploadActivityDeps } from './upload-activities';
import { createReprocessActivities } from './reprocess-activities';

export type ActivityDeps = UploadActivityDeps & DownstreamActivityDeps & HousekeepingDeps & DeletionActivityDeps;

export function createActivities(deps: ActivityDeps) {
  return {
    ...createUploadActivities(deps),
    ...createDownstreamActivities(deps),
    ...createHousekeepingActivities(deps),
    ...createResumableActivities(deps),
    ...createDeletionActivities(deps),
    ...createReprocessActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
