// Every activity the workers register, built from injected dependencies.
import { createDownstreamActivities, type DownstreamActivityDeps } from './downstream-activities';
import { createUploadActivities, type UploadActivityDeps } from './upload-activities';

export type ActivityDeps = UploadActivityDeps & DownstreamActivityDeps;

export function createActivities(deps: ActivityDeps) {
  return { ...createUploadActivities(deps), ...createDownstreamActivities(deps) };
}

export type Activities = ReturnType<typeof createActivities>;
